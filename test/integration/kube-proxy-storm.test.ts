// The KubeProxy's storm in front of the real kube-apiserver (test/support/storm.ts, ADR 40): the
// answers a client gets (500 etcd timeout and 429 APF with Retry-After, as Status bodies), a
// delayed call held on the virtual clock until its (whole-second) moment and then answered by the
// API server, a client giving up while held, explicit fault rules winning over the storm, and
// nothing held or left on the clock after stop.

import { afterEach, describe, expect, it } from 'vitest';
import { testKubeConfig } from '../support/apiserver.js';
import { startKubeProxy, type KubeProxy } from '../support/kube-proxy.js';
import { etcdTimeoutStatus, StormProfile, type StormClientProfile } from '../support/storm.js';
import { VirtualClock } from '../harness/virtual-clock.js';

const T0 = Date.parse('2026-12-01T10:00:00Z');
const PATH = '/api/v1/namespaces/default';

let proxy: KubeProxy | undefined;
afterEach(async () => {
  await proxy?.stop();
  proxy = undefined;
});

async function stormed(
  profiles: Record<string, Partial<StormClientProfile>>,
): Promise<{ proxy: KubeProxy; clock: VirtualClock }> {
  const clock = new VirtualClock({ start: T0 });
  proxy = await startKubeProxy(testKubeConfig(), { tag: 'untagged', clock });
  proxy.setStorm(new StormProfile({ seed: 1, startMs: T0, durationMs: 60_000, profiles }), {
    holdOn: clock,
  });
  return { proxy, clock };
}

const get = (p: KubeProxy, tag: string, signal?: AbortSignal): Promise<Response> =>
  fetch(`${p.url}/_tag/${tag}${PATH}`, signal === undefined ? {} : { signal });

describe('KubeProxy storm', () => {
  it('answers 500 with the etcd timeout Status, never reaching the API server', async () => {
    const { proxy: p } = await stormed({ a: { error500: 1 } });
    const res = await get(p, 'a');
    expect(res.status).toBe(500);
    // The exact body is pinned in test/unit/harness/storm-profile.test.ts.
    expect(await res.json()).toEqual(etcdTimeoutStatus());
    expect(p.calls[0]).toMatchObject({ storm: 'error500', status: 500, at: T0 });
    expect(p.calls[0]?.upstreamStatus).toBeUndefined();
  });

  it('answers 429 with Retry-After and the APF Status', async () => {
    const { proxy: p } = await stormed({ a: { tooMany: 1, retryAfterSeconds: 2 } });
    const res = await get(p, 'a');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(await res.json()).toMatchObject({
      reason: 'TooManyRequests',
      code: 429,
      details: { retryAfterSeconds: 2 },
    });
  });

  it('holds a delayed call on the virtual clock, then the API server answers it', async () => {
    const { proxy: p, clock } = await stormed({
      a: { delayed: 1, delayMinMs: 2400, delayMaxMs: 2400 },
    });
    let answered: number | undefined;
    const pending = get(p, 'a').then((res) => {
      answered = clock.now();
      return res;
    });
    while (p.heldOnClock === 0) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 200));
    expect(answered).toBeUndefined();
    expect(p.upstreamInFlight).toBe(0);
    // 2.4 s rounds to the whole second 2 s.
    await clock.advance(1999);
    await new Promise((r) => setTimeout(r, 100));
    expect(answered).toBeUndefined();
    await clock.advance(1);
    const res = await pending;
    expect(res.status).toBe(200);
    expect(answered).toBe(T0 + 2000);
    expect(p.heldOnClock).toBe(0);
    expect(p.calls[0]).toMatchObject({ storm: 'delayed', upstreamStatus: 200 });
  });

  it('forgets a held call whose client gave up, and forwards nothing for it', async () => {
    const { proxy: p, clock } = await stormed({ a: { delayed: 1 } });
    const abort = new AbortController();
    const pending = get(p, 'a', abort.signal).catch((e: unknown) => e);
    while (p.heldOnClock === 0) await new Promise((r) => setTimeout(r, 5));
    abort.abort();
    await pending;
    while (p.heldOnClock > 0) await new Promise((r) => setTimeout(r, 5));
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(10_000);
    expect(p.calls[0]?.upstreamStatus).toBeUndefined();
    expect(p.upstreamInFlight).toBe(0);
  });

  it('lets explicit fault rules win, leaves other tags alone, and drops held calls on stop', async () => {
    const { proxy: p, clock } = await stormed({ a: { error500: 1 }, c: { delayed: 1 } });
    p.addFault({ kind: 'status', status: 409, match: { clientTag: 'a' }, times: 1 });
    expect((await get(p, 'a')).status).toBe(409);
    expect((await get(p, 'a')).status).toBe(500);
    expect((await get(p, 'b')).status).toBe(200);
    const held = get(p, 'c');
    while (p.heldOnClock === 0) await new Promise((r) => setTimeout(r, 5));
    p.dropHeld();
    expect((await held).status).toBe(503);
    expect(clock.pendingTimers).toBe(0);
  });
});
