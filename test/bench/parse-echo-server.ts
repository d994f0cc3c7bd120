// P3's baseline: the minimum any CloudEvent function does on detect's no-op path, with detect's
// own parser. express, the same bounded raw body, `parseCloudEvent` from shared/runtime (binary
// mode read from the ce-* headers, data parsed as JSON; the code detect runs), then 200. What
// detect adds beyond this (its handler, the AG's normalisation, the decision, logging, the
// outcome mapping) is what P3's ratio measures. The echo of echo-server.ts parses with the SDK's
// HTTP.toEvent instead, which costs more than detect's reader, so it is no baseline for P3
// (issue 21). The bench compiles this file to .mjs with the import pointed at dist/.
//
// Environment: PORT (required).

import { createServer } from 'node:http';
import express from 'express';
import { HttpInputError, parseCloudEvent } from '../../shared/runtime/cloudevent-http.js';

const port = Number(process.env['PORT']);
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  process.stderr.write('parse-echo-server: PORT must be a TCP port number\n');
  process.exit(1);
}

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.post('/', express.raw({ type: () => true, limit: 1024 * 1024 }), (req, res) => {
  const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  try {
    const event = parseCloudEvent(req.headers, body);
    res.status(200).json({ result: event.type });
  } catch (e) {
    res.status(e instanceof HttpInputError ? e.status : 500).json({ error: 'not a CloudEvent' });
  }
});

const server = createServer(app);
server.keepAliveTimeout = 5000;
server.listen(port, () => undefined);
process.once('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeIdleConnections();
});
