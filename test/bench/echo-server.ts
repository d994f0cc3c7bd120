// The baseline for throughput, cold start and memory: a bare express + CloudEvents server that
// reads the body, parses it with HTTP.toEvent and answers 200. The bench compiles it to plain
// JavaScript and runs it with `node`, exactly like the functions in dist/.
//
// Environment: PORT (required).

import { createServer } from 'node:http';
import express from 'express';
import { HTTP } from 'cloudevents';

const port = Number(process.env['PORT']);
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  process.stderr.write('echo-server: PORT must be a TCP port number\n');
  process.exit(1);
}

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.post('/', express.raw({ type: () => true, limit: 1024 * 1024 }), (req, res) => {
  const body = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
  try {
    const event = HTTP.toEvent({ headers: req.headers, body });
    res.status(200).json({ result: Array.isArray(event) ? 'batch' : event.type });
  } catch {
    res.status(400).json({ error: 'not a CloudEvent' });
  }
});

const server = createServer(app);
server.keepAliveTimeout = 5000;
server.listen(port, () => undefined);
process.once('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeIdleConnections();
});
