// The Broker redelivers on Knative's schedule when its retries wait on a clock (retryOn 'clock',
// docs/adr/0041-knative-retry-schedule.md): the shipped Triggers' PT1S exponential backoff gives
// waits of 1 s, 2 s, 4 s, 8 s, 16 s (32 s for the action Triggers' sixth retry), on the virtual
// clock in e2e and on the real clock in `npm start -- --kubeconfig`.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CloudEvent } from 'cloudevents';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker, retryDelayMs } from '../../harness/knative/broker.js';
import type { BrokerOptions, BrokerTuning } from '../../harness/knative/index.js';
import { loadKnativeManifests, type TriggerSpec } from '../../harness/knative/manifests.js';
import { VirtualClock } from '../../harness/virtual-clock.js';
import { systemTimerClock } from '../../../shared/runtime/clock.js';
import { REAL_CLOCK_BROKER } from '../../harness/start-cluster.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const NS = 'source-watcher-recovery';
const triggers = loadKnativeManifests(resolve(REPO, 'knative'), NS).triggers;

const servers: Server[] = [];
const brokers: Broker[] = [];
afterEach(async () => {
  await Promise.all(brokers.splice(0).map((b) => b.close()));
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

/** A subscriber that always answers 503 and records when (on `now`) each attempt arrived. */
async function failing(now: () => number): Promise<{ url: string; at: number[] }> {
  const at: number[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      at.push(now());
      res.writeHead(503);
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, at };
}

function agEvent(): CloudEvent<unknown> {
  return new CloudEvent<unknown>({
    type: 'dev.knative.apiserver.resource.update',
    source: 'https://127.0.0.1:6443',
    subject:
      '/apis/source.extensions.fluxcd.io/v1beta1/namespaces/cozy-system/artifactgenerators/x',
    datacontenttype: 'application/json',
    kind: 'ArtifactGenerator',
    data: { kind: 'ArtifactGenerator', metadata: { name: 'x', namespace: 'cozy-system' } },
  });
}

function gaps(times: number[]): number[] {
  return times.slice(1).map((t, i) => t - (times[i] ?? 0));
}

/** A Broker with this one Trigger, its subscriber at `url`, retrying on the clock. */
function onlyBroker(
  trigger: TriggerSpec,
  url: string,
  clock: NonNullable<BrokerOptions['clock']>,
  tuning: BrokerTuning = { retryOn: 'clock' },
): Broker {
  const service = trigger.subscriber.service ?? '';
  return new Broker({
    namespace: NS,
    name: trigger.broker,
    triggers: [trigger],
    subscribers: { [service]: [url], 'dead-letter': [] },
    clock,
    ...tuning,
  });
}

describe('Knative retry schedule', () => {
  // Knative's dispatcher counts retries from 0: exponential PT1S × 2^r, linear PT1S × r.
  const schedules = [
    {
      policy: 'exponential',
      label: '1 s, 2 s, 4 s ...',
      delays: [1000, 2000, 4000, 8000, 16_000, 32_000],
    },
    { policy: 'linear', label: '0 s, 1 s, 2 s ...', delays: [0, 1000, 2000, 3000] },
  ] as const;
  it.each(schedules)('is $label after failed attempts 1, 2, 3 ... for PT1S $policy', (s) => {
    expect(s.delays.map((_, i) => retryDelayMs(s.policy, 1000, i + 1))).toEqual(s.delays);
  });

  const shipped = triggers
    .filter((t) => t.delivery.backoffPolicy === 'exponential' && t.delivery.backoffDelayMs === 1000)
    .map((t) => ({ name: t.name, retry: t.delivery.retry, t }));
  it('covers every shipped Trigger', () => {
    expect(shipped.length).toBe(triggers.length);
    expect(shipped.length).toBeGreaterThan(0);
  });

  it.each(shipped)(
    'virtual clock: $name (retry $retry) redelivers after 1 s, 2 s, 4 s ... then dead-letters',
    async ({ t, retry }) => {
      const clock = new VirtualClock({ start: Date.parse('2026-12-01T10:00:00Z') });
      const sub = await failing(() => clock.now());
      const broker = onlyBroker({ ...t, attributes: {} }, sub.url, clock);
      brokers.push(broker);
      await broker.start();
      const t0 = clock.now();
      broker.ingest(agEvent());
      // Nothing moves the clock but us: idle() returns while a retry waits on the clock.
      for (;;) {
        await broker.idle();
        const next = clock.peek();
        if (next === undefined) break;
        await clock.advanceTo(next, { settle: () => broker.idle() });
      }
      expect(sub.at[0]).toBe(t0);
      expect(gaps(sub.at)).toEqual(Array.from({ length: retry }, (_, i) => 1000 * 2 ** i));
      expect(broker.deadLetters).toHaveLength(1);
      expect(broker.deadLetters[0]?.attempts).toBe(retry + 1);
      expect(clock.pendingTimers).toBe(0);
    },
  );

  it('real clock (npm start -- --kubeconfig): the first two retries come 1 s and 2 s later', async () => {
    const clock = systemTimerClock();
    const sub = await failing(() => Date.now());
    const base = triggers[0];
    if (base === undefined) throw new Error('no Trigger in knative/');
    const broker = onlyBroker(
      { ...base, attributes: {}, delivery: { ...base.delivery, retry: 2 } },
      sub.url,
      clock,
      REAL_CLOCK_BROKER,
    );
    brokers.push(broker);
    await broker.start();
    broker.ingest(agEvent());
    while (broker.deadLetters.length === 0) await new Promise((r) => setTimeout(r, 20));
    clock.stop();
    const [first, second] = gaps(sub.at);
    expect(first).toBeGreaterThanOrEqual(990);
    expect(first).toBeLessThan(1400);
    expect(second).toBeGreaterThanOrEqual(1990);
    expect(second).toBeLessThan(2400);
  }, 10_000);

  it('close() cancels the retries waiting on the clock', async () => {
    const clock = new VirtualClock();
    const sub = await failing(() => clock.now());
    const base = triggers[0];
    if (base === undefined) throw new Error('no Trigger in knative/');
    const broker = onlyBroker({ ...base, attributes: {} }, sub.url, clock);
    await broker.start();
    broker.ingest(agEvent());
    await broker.idle();
    expect(broker.retriesWaiting).toBe(1);
    await broker.close();
    expect(clock.pendingTimers).toBe(0);
    expect(broker.deliveries.map((d) => d.outcome)).toEqual(['retry', 'abandoned']);
  });
});
