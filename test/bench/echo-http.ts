// What both echo baselines share: PORT from the environment, express with the same bounded raw
// body on POST /, and the server's keep-alive and SIGTERM handling as the functions have them.
// Each echo passes the part it measures: how the CloudEvent is read from the request. The bench
// compiles this file next to them (build.ts).

import { createServer } from 'node:http';
import express, { type Request, type Response } from 'express';

/** Serves `answer` on POST / at $PORT until SIGTERM; `name` prefixes the start-up error. */
export function serveEcho(name: string, answer: (req: Request, res: Response) => void): void {
  const port = Number(process.env['PORT']);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    process.stderr.write(`${name}: PORT must be a TCP port number\n`);
    process.exit(1);
  }
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.post('/', express.raw({ type: () => true, limit: 1024 * 1024 }), answer);
  const server = createServer(app);
  server.keepAliveTimeout = 5000;
  server.listen(port, () => undefined);
  process.once('SIGTERM', () => {
    server.close(() => process.exit(0));
    server.closeIdleConnections();
  });
}
