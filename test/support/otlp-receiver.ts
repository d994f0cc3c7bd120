// A real OTLP/HTTP JSON receiver on 127.0.0.1 for the unit tests of the metrics port
// (shared/runtime/metrics-otel.ts): every export's body, parsed, in the order it arrived. The e2e
// and reliability suites use the real Prometheus room (test/harness/prometheus/) instead.

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpReceiver<Body> {
  /** Where the port exports to (OTLP's metrics path). */
  readonly url: string;
  /** The base endpoint (OTEL_EXPORTER_OTLP_ENDPOINT). */
  readonly endpoint: string;
  readonly bodies: Body[];
  close(): Promise<void>;
}

export async function startOtlpReceiver<Body>(): Promise<OtlpReceiver<Body>> {
  const bodies: Body[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      bodies.push(JSON.parse(text) as Body);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${endpoint}/v1/metrics`,
    endpoint,
    bodies,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
