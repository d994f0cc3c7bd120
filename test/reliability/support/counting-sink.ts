// A Broker ingress stand-in that accepts every post with 202 and only counts them (the recording
// sink in test/support keeps every event, which would grow the heap during a long fuzz run).

import { startHttp, type Started } from '../../support/http-events.js';

export interface CountingSink extends Started {
  /** Posts received, by ce-type. */
  readonly received: Map<string, number>;
  total(): number;
}

export async function startCountingSink(): Promise<CountingSink> {
  const received = new Map<string, number>();
  const started = await startHttp((req, res) => {
    const type = String(req.headers['ce-type'] ?? '');
    req.resume();
    req.on('end', () => {
      received.set(type, (received.get(type) ?? 0) + 1);
      res.statusCode = 202;
      res.end();
    });
  });
  return {
    ...started,
    received,
    total: () => [...received.values()].reduce((a, b) => a + b, 0),
  };
}
