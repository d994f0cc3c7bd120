// The baseline for throughput, cold start and memory: a bare express + CloudEvents server that
// reads the body, parses it with HTTP.toEvent and answers 200. The bench compiles it to plain
// JavaScript and runs it with `node`, exactly like the functions in dist/.
//
// Environment: PORT (required).

import { serveEcho } from './echo-http.js';
import { HTTP } from 'cloudevents';

serveEcho('echo-server', (req, res) => {
  const body = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
  try {
    const event = HTTP.toEvent({ headers: req.headers, body });
    res.status(200).json({ result: Array.isArray(event) ? 'batch' : event.type });
  } catch {
    res.status(400).json({ error: 'not a CloudEvent' });
  }
});
