// The PingSource adapter on the real-clock path (`npm start -- --kubeconfig`), over an hour, with
// a one-moment alarm like detect's (issue 12, item 0). After its moment the schedule's next tick
// is a year away: the adapter must wait for it, not ping again. setTimeout is faked the way Node
// behaves (a delay over 2^31-1 ms fires after 1 ms), so a clock that passes a raw year-long delay
// floods the Broker here as it did against a real cluster.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cronFor } from '../../../shared/core/follow-up/alarm.js';
import type { PingSource } from '../../../shared/kube/port.js';
import { systemTimerClock } from '../../../shared/runtime/clock.js';
import { PingScheduler } from '../../harness/knative/ping-scheduler.js';

const START = Date.UTC(2026, 10, 30, 12, 0, 0);
const HOUR = 3_600_000;

function alarmSource(moment: number): PingSource {
  return {
    apiVersion: 'sources.knative.dev/v1',
    kind: 'PingSource',
    metadata: { namespace: 'source-watcher-recovery', name: 'recovery-alarm' },
    spec: {
      schedule: cronFor(moment),
      timezone: 'UTC',
      contentType: 'application/json',
      data: '{"purpose":"follow-up"}',
      sink: { ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default' } },
    },
  };
}

async function countingSink(): Promise<{ server: Server; url: string; received: () => number }> {
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}/`, received: () => received };
}

describe('PingScheduler on the system timer clock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a one-moment alarm pings exactly once across an hour', async () => {
    const sink = await countingSink();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: START });
    const clock = systemTimerClock();
    let sends = 0;
    const moment = START + 20 * 60_000;
    const scheduler = new PingScheduler({
      clock,
      sinkUrl: () => {
        sends++;
        return sink.url;
      },
      staticSources: [alarmSource(moment)],
      seed: 7,
    });
    await scheduler.start();
    const sendTimes: number[] = [];
    try {
      // One virtual second at a time, so that a flood stops the loop early instead of running
      // millions of 1 ms timers.
      for (let t = 0; t < HOUR && sends <= 1; t += 1000) {
        const before = sends;
        await vi.advanceTimersByTimeAsync(1000);
        if (sends > before) sendTimes.push(Date.now());
      }
    } finally {
      vi.useRealTimers();
      await scheduler.stop();
      clock.stop();
    }
    expect(sends).toBe(1);
    // It fired at its moment (plus at most 500 ms of jitter, seen at 1 s resolution).
    expect(sendTimes).toHaveLength(1);
    expect(sendTimes[0]).toBeGreaterThanOrEqual(moment);
    expect(sendTimes[0]).toBeLessThanOrEqual(moment + 1000);
    // The event reached the sink once, and the next tick is the same moment next year.
    await vi.waitFor(() => expect(sink.received()).toBe(1));
    await new Promise<void>((resolve) => sink.server.close(() => resolve()));
  });
});

describe('PingScheduler on a clock that wakes it early', () => {
  it('sends no tick before its moment', async () => {
    const now = START;
    let wakes = 0;
    // Fires every timer on the next turn of the event loop, whatever its moment (at most 200 times).
    const hasty = {
      now: () => now,
      setTimer(_at: number, fn: () => void | Promise<void>): number {
        if (wakes < 200) {
          wakes++;
          setImmediate(() => void fn());
        }
        return wakes;
      },
    };
    let sends = 0;
    const scheduler = new PingScheduler({
      clock: hasty,
      sinkUrl: () => {
        sends++;
        return 'http://127.0.0.1:9/';
      },
      staticSources: [alarmSource(START + 60_000)],
      seed: 3,
    });
    await scheduler.start();
    await vi.waitFor(() => expect(wakes).toBe(200));
    await scheduler.stop();
    expect(sends).toBe(0);
    expect(scheduler.fires).toEqual([]);
  });
});
