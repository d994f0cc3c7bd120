// The storm fault profile (test/support/storm.ts): seeded repeatability independent of arrival
// order, rates within tolerance (requests and watch connects: held, closed mid-stream, 410 on a
// resume), the window, exclusions, and bad configuration refused.

import { describe, expect, it } from 'vitest';
import type { ApiRequestInfo } from '../../support/kube-proxy.js';
import {
  apfRejectedStatus,
  defaultStormProfiles,
  etcdTimeoutStatus,
  EVENT_PATH_STORM,
  FUNCTIONS_STORM,
  functionsOnlyStormProfiles,
  StormProfile,
  watchExpiredEvent,
  type StormDecision,
  type StormOptions,
} from '../../support/storm.js';

const T0 = Date.parse('2026-12-01T10:00:00Z');
const WINDOW = 8 * 60_000;

type Call = ApiRequestInfo & { clientTag: string };

function call(clientTag: string, name: string, over: Partial<ApiRequestInfo> = {}): Call {
  return {
    clientTag,
    verb: 'get',
    group: 'source.extensions.fluxcd.io',
    version: 'v1beta1',
    resource: 'artifactgenerators',
    subresource: '',
    namespace: 'cozy-system',
    name,
    ...over,
  };
}

function storm(over: Partial<StormOptions> = {}): StormProfile {
  return new StormProfile({
    seed: 7,
    startMs: T0,
    durationMs: WINDOW,
    profiles: defaultStormProfiles(),
    ...over,
  });
}

/** n calls per AG for `ags` AGs, in the given order of AGs. */
function decisions(p: StormProfile, order: number[], n: number): Map<string, StormDecision[]> {
  const out = new Map<string, StormDecision[]>();
  for (let round = 0; round < n; round++) {
    for (const i of order) {
      const name = `ag-${i}`;
      const d = p.decide(call('detect', name), T0 + 1000) ?? ({ kind: 'none' } as never);
      out.set(name, [...(out.get(name) ?? []), d]);
    }
  }
  return out;
}

describe('storm profile', () => {
  it('repeats with the same seed, whatever order the requests arrive in', () => {
    const ags = Array.from({ length: 50 }, (_, i) => i);
    const a = decisions(storm(), ags, 20);
    const b = decisions(storm(), [...ags].reverse(), 20);
    expect(b).toEqual(a);
    const c = decisions(storm({ seed: 8 }), ags, 20);
    expect(c).not.toEqual(a);
  });

  const rates = [
    { tag: 'detect', error500: 0.2, tooMany: 0.1, delayed: 0.2 },
    { tag: 'force-drift', error500: 0.2, tooMany: 0.1, delayed: 0.2 },
    { tag: 'surface-stalled', error500: 0.2, tooMany: 0.1, delayed: 0.2 },
    { tag: 'source-watcher', error500: 0.05, tooMany: 0.025, delayed: 0.05 },
    { tag: 'apiserversource', error500: 0.2, tooMany: 0.1, delayed: 0.2 },
    { tag: 'pingsource', error500: 0.2, tooMany: 0.1, delayed: 0.2 },
    { tag: 'apiserversource', error500: 0, tooMany: 0, delayed: 0, old: true },
    { tag: 'pingsource', error500: 0, tooMany: 0, delayed: 0, old: true },
    { tag: 'source-watcher', error500: 0.05, tooMany: 0.025, delayed: 0.05, old: true },
  ];
  it.each(rates)(
    '$tag (ADR 40 profile: $old): rates within ±1.5 points over 20,000 requests',
    (r) => {
      const p = storm(r.old === true ? { profiles: functionsOnlyStormProfiles() } : {});
      const seen = { error500: 0, tooMany: 0, delayed: 0 };
      const delays: number[] = [];
      const n = 20_000;
      for (let i = 0; i < n; i++) {
        // The adapters list collections; the functions and source-watcher read objects.
        const d = p.decide(
          call(r.tag, `ag-${i % 400}`, r.tag.endsWith('source') ? { verb: 'list', name: '' } : {}),
          T0 + i,
        );
        if (d === undefined) continue;
        if (d.kind !== 'error500' && d.kind !== 'tooMany' && d.kind !== 'delayed') {
          throw new Error(`a request got a watch's fault: ${d.kind}`);
        }
        seen[d.kind] += 1;
        if (d.kind === 'delayed') delays.push(d.delayMs);
        if (d.kind === 'tooMany') expect(d.retryAfterSeconds).toBe(1);
      }
      expect(Math.abs(seen.error500 / n - r.error500)).toBeLessThan(0.015);
      expect(Math.abs(seen.tooMany / n - r.tooMany)).toBeLessThan(0.015);
      expect(Math.abs(seen.delayed / n - r.delayed)).toBeLessThan(0.015);
      if (delays.length > 0) {
        expect(Math.min(...delays)).toBeGreaterThanOrEqual(2000);
        expect(Math.max(...delays)).toBeLessThanOrEqual(8000);
        // Spread over the range, not stuck at one end.
        const mean = delays.reduce((a, b) => a + b, 0) / delays.length;
        expect(Math.abs(mean - 5000)).toBeLessThan(250);
      }
    },
  );

  it('acts only inside its window, and on a watch only by the watch knobs', () => {
    const always = storm({ profiles: { detect: { error500: 1 } } });
    expect(always.decide(call('detect', 'x'), T0 - 1)).toBeUndefined();
    expect(always.decide(call('detect', 'x'), T0)).toEqual({ kind: 'error500' });
    expect(always.decide(call('detect', 'x'), T0 + WINDOW - 1)).toEqual({ kind: 'error500' });
    expect(always.decide(call('detect', 'x'), T0 + WINDOW)).toBeUndefined();
    expect(always.decide(call('detect', 'x', { verb: 'watch' }), T0 + 1)).toBeUndefined();
    expect(always.counts).toEqual({
      seen: 2,
      error500: 2,
      tooMany: 0,
      delayed: 0,
      watches: 0,
      watchHeld: 0,
      watchClosed: 0,
      watchGone: 0,
    });
    const held = storm({
      profiles: { a: { watchHeld: 1, watchHeldMinMs: 3000, watchHeldMaxMs: 3000 } },
    });
    const watch = call('a', '', { verb: 'watch' });
    expect(held.decide(watch, T0 - 1)).toBeUndefined();
    expect(held.decide(watch, T0)).toEqual({ kind: 'watchHeld', delayMs: 3000 });
    expect(held.decide(watch, T0 + WINDOW)).toBeUndefined();
  });

  /** Watch connects of one adapter: list, then `resumes` watches, a list again every `every`. */
  function watchDecisions(
    p: StormProfile,
    tag: string,
    n: number,
    every: number,
  ): { first: (StormDecision | undefined)[]; resumed: (StormDecision | undefined)[] } {
    const first: (StormDecision | undefined)[] = [];
    const resumed: (StormDecision | undefined)[] = [];
    const list = call(tag, '', { verb: 'list' });
    const watch = call(tag, '', { verb: 'watch' });
    for (let i = 0; i < n; i++) {
      if (i % every === 0) p.decide(list, T0 + 1);
      (i % every === 0 ? first : resumed).push(p.decide(watch, T0 + 1));
    }
    return { first, resumed };
  }

  const watchRates = [
    { tag: 'apiserversource', held: 0.2, goneOnResume: 0.25, closesPerMinute: 0.5 },
    { tag: 'pingsource', held: 0.2, goneOnResume: 0.25, closesPerMinute: 0.5 },
    { tag: 'detect', held: 0, goneOnResume: 0, closesPerMinute: 0 },
    { tag: 'source-watcher', held: 0, goneOnResume: 0, closesPerMinute: 0 },
  ];
  it.each(watchRates)(
    '$tag: watch connects held, closed and 410 on resume at the profile rates (±1.5 points, 20,000 connects)',
    (r) => {
      // A long window, so that the lifetimes are not cut by its end.
      const p = storm({ durationMs: 1000 * 24 * 3600_000 });
      const { first, resumed } = watchDecisions(p, r.tag, 20_000, 4);
      // The first watch after a list is no resume: never 410.
      expect(first.filter((d) => d?.kind === 'watchGone')).toEqual([]);
      const all = [...first, ...resumed];
      const share = (ds: (StormDecision | undefined)[], kind: string) =>
        ds.filter((d) => d?.kind === kind).length / ds.length;
      expect(Math.abs(share(resumed, 'watchGone') - r.goneOnResume)).toBeLessThan(0.015);
      // Held: among the connects not answered 410 (the two draws share one number).
      const notGone = all.filter((d) => d?.kind !== 'watchGone');
      const heldShare = share(notGone, 'watchHeld');
      const expectedHeld = r.held / (1 - (r.goneOnResume * resumed.length) / all.length);
      expect(Math.abs(heldShare - expectedHeld)).toBeLessThan(0.015);
      const delays = all.flatMap((d) => (d?.kind === 'watchHeld' ? [d.delayMs] : []));
      if (delays.length > 0) {
        expect(Math.min(...delays)).toBeGreaterThanOrEqual(2000);
        expect(Math.max(...delays)).toBeLessThanOrEqual(8000);
      }
      // Every forwarded watch has a lifetime of mean 1/rate minutes (exponential).
      const lifetimes = all.flatMap((d) =>
        d?.kind === 'watchClosed'
          ? [d.closeAfterMs]
          : d?.kind === 'watchHeld' && d.closeAfterMs !== undefined
            ? [d.closeAfterMs - d.delayMs]
            : [],
      );
      if (r.closesPerMinute === 0) {
        expect(lifetimes).toEqual([]);
        return;
      }
      expect(lifetimes.length).toBe(notGone.length);
      const mean = lifetimes.reduce((a, b) => a + b, 0) / lifetimes.length;
      expect(Math.abs(mean / (60_000 / r.closesPerMinute) - 1)).toBeLessThan(0.05);
      expect(Math.min(...lifetimes)).toBeGreaterThanOrEqual(1000);
    },
  );

  it('closes a watch mid-stream only inside the window, and counts what it did', () => {
    const p = storm({ profiles: { a: { watchClosesPerMinute: 60 } } });
    const watch = call('a', '', { verb: 'watch' });
    const early = p.decide(watch, T0);
    expect(early).toMatchObject({ kind: 'watchClosed' });
    // 1 s before the end: a lifetime of at least 1 s ends outside the window.
    expect(p.decide(watch, T0 + WINDOW - 1000)).toBeUndefined();
    expect(p.counts).toMatchObject({ watches: 2, watchClosed: 1, watchHeld: 0, watchGone: 0 });
  });

  it('closes the watches open when it starts at the same rate, only inside the window', () => {
    const p = storm({ durationMs: 1000 * 24 * 3600_000 });
    const watch = call('apiserversource', '', { verb: 'watch' });
    const lifetimes = Array.from({ length: 5000 }, () => p.closeOpenWatch(watch, T0 + 1) ?? NaN);
    const mean = lifetimes.reduce((a, b) => a + b, 0) / lifetimes.length;
    expect(Math.abs(mean / (60_000 / EVENT_PATH_STORM.watchClosesPerMinute) - 1)).toBeLessThan(
      0.05,
    );
    expect(p.closeOpenWatch(call('detect', '', { verb: 'watch' }), T0 + 1)).toBeUndefined();
    expect(p.closeOpenWatch(watch, T0 - 1)).toBeUndefined();
    const short = storm({ profiles: { a: { watchClosesPerMinute: 0.001 } } });
    expect(short.closeOpenWatch(call('a', '', { verb: 'watch' }), T0 + 1)).toBeUndefined();
  });

  it('repeats the watch decisions with the same seed, whatever else is asked in between', () => {
    const a = watchDecisions(storm(), 'apiserversource', 200, 3);
    const p = storm();
    for (let i = 0; i < 50; i++) p.decide(call('pingsource', '', { verb: 'watch' }), T0 + 1);
    const b = watchDecisions(p, 'apiserversource', 200, 3);
    expect(b).toEqual(a);
  });

  it("leaves source-watcher's status writes alone by default, and excludes what a profile says", () => {
    const p = storm({
      profiles: {
        'source-watcher': {
          ...defaultStormProfiles()['source-watcher'],
          error500: 1,
          tooMany: 0,
          delayed: 0,
        },
      },
    });
    const status = call('source-watcher', 'x', { verb: 'patch', subresource: 'status' });
    const meta = call('source-watcher', 'x', { verb: 'patch' });
    expect(p.decide(status, T0 + 1)).toBeUndefined();
    expect(p.decide(meta, T0 + 1)).toEqual({ kind: 'error500' });
  });

  it.each<[string, StormOptions['profiles']]>([
    ['a probability above 1', { detect: { error500: 1.5 } }],
    ['a negative probability', { detect: { tooMany: -0.1 } }],
    ['probabilities adding up over 1', { detect: { ...FUNCTIONS_STORM, delayed: 0.8 } }],
    ['a delay range upside down', { detect: { delayMinMs: 9000, delayMaxMs: 2000 } }],
    ['a Retry-After of 0', { detect: { retryAfterSeconds: 0 } }],
    ['a watch-held share above 1', { a: { watchHeld: 1.2 } }],
    ['a negative 410-on-resume share', { a: { watchGoneOnResume: -0.5 } }],
    ['watch shares adding up over 1', { a: { ...EVENT_PATH_STORM, watchGoneOnResume: 0.9 } }],
    ['a watch hold range upside down', { a: { watchHeldMinMs: 8000, watchHeldMaxMs: 2000 } }],
    ['a negative close rate', { a: { watchClosesPerMinute: -1 } }],
    ['an infinite close rate', { a: { watchClosesPerMinute: Infinity } }],
  ])('refuses %s', (_what, profiles) => {
    expect(() => storm({ profiles })).toThrow(RangeError);
  });

  it('answers with the Status bodies kube-apiserver sends', () => {
    const failure = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure' };
    const etcdTimeout = { message: 'etcdserver: request timed out', code: 500 };
    expect(etcdTimeoutStatus()).toEqual({ ...failure, ...etcdTimeout });
    const apf = { reason: 'TooManyRequests', code: 429, details: { retryAfterSeconds: 1 } };
    expect(apfRejectedStatus(1)).toMatchObject({ ...failure, ...apf });
    expect(watchExpiredEvent('123')).toEqual({
      type: 'ERROR',
      object: {
        ...failure,
        reason: 'Expired',
        code: 410,
        message: 'too old resource version: 123',
      },
    });
  });
});
