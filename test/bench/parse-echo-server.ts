// P3's baseline: the minimum any CloudEvent function does on detect's no-op path, with detect's
// own parser. express, the same bounded raw body, `parseCloudEvent` from shared/runtime (binary
// mode read from the ce-* headers, data parsed as JSON; the code detect runs), then 200. What
// detect adds beyond this (its handler, the AG's normalisation, the decision, logging, the
// outcome mapping) is what P3's ratio measures. The echo of echo-server.ts parses with the SDK's
// HTTP.toEvent instead, which costs more than detect's reader, so it is no baseline for P3
// (issue 21). The bench bundles this file as detect is bundled (toolchain/bundle.mjs --entry,
// test/bench/build.ts): the same esbuild options, the parser from the same sources.
//
// Environment: PORT (required).

import { serveEcho } from './echo-http.js';
import { HttpInputError, parseCloudEvent } from '../../shared/runtime/cloudevent-http.js';

serveEcho('parse-echo-server', (req, res) => {
  const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  try {
    const event = parseCloudEvent(req.headers, body);
    res.status(200).json({ result: event.type });
  } catch (e) {
    res.status(e instanceof HttpInputError ? e.status : 500).json({ error: 'not a CloudEvent' });
  }
});
