// The storm fault profile (test/support/storm.ts): seeded repeatability independent of arrival
// order, rates within tolerance, the window, exclusions, and bad configuration refused.

import { describe, expect, it } from 'vitest';
import type { ApiRequestInfo } from '../../support/kube-proxy.js';
import {
  apfRejectedStatus,
  defaultStormProfiles,
  etcdTimeoutStatus,
  FUNCTIONS_STORM,
  StormProfile,
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
    { tag: 'apiserversource', error500: 0, tooMany: 0, delayed: 0 },
    { tag: 'pingsource', error500: 0, tooMany: 0, delayed: 0 },
  ];
  it.each(rates)('$tag: rates within ±1.5 points over 20,000 requests', (r) => {
    const p = storm();
    const seen = { error500: 0, tooMany: 0, delayed: 0 };
    const delays: number[] = [];
    const n = 20_000;
    for (let i = 0; i < n; i++) {
      const d = p.decide(call(r.tag, `ag-${i % 400}`), T0 + i);
      if (d === undefined) continue;
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
  });

  it('acts only inside its window, and never on a watch', () => {
    const always = storm({ profiles: { detect: { error500: 1 } } });
    expect(always.decide(call('detect', 'x'), T0 - 1)).toBeUndefined();
    expect(always.decide(call('detect', 'x'), T0)).toEqual({ kind: 'error500' });
    expect(always.decide(call('detect', 'x'), T0 + WINDOW - 1)).toEqual({ kind: 'error500' });
    expect(always.decide(call('detect', 'x'), T0 + WINDOW)).toBeUndefined();
    expect(always.decide(call('detect', 'x', { verb: 'watch' }), T0 + 1)).toBeUndefined();
    expect(always.counts).toEqual({ seen: 2, error500: 2, tooMany: 0, delayed: 0 });
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

  const bad: { what: string; profiles: StormOptions['profiles'] }[] = [
    { what: 'a probability above 1', profiles: { detect: { error500: 1.5 } } },
    { what: 'a negative probability', profiles: { detect: { tooMany: -0.1 } } },
    {
      what: 'probabilities adding up over 1',
      profiles: { detect: { ...FUNCTIONS_STORM, delayed: 0.8 } },
    },
    {
      what: 'a delay range upside down',
      profiles: { detect: { delayMinMs: 9000, delayMaxMs: 2000 } },
    },
    { what: 'a Retry-After of 0', profiles: { detect: { retryAfterSeconds: 0 } } },
  ];
  it.each(bad)('refuses $what', ({ profiles }) => {
    expect(() => storm({ profiles })).toThrow(RangeError);
  });

  it('answers with the Status bodies kube-apiserver sends', () => {
    const failure = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure' };
    const etcdTimeout = { message: 'etcdserver: request timed out', code: 500 };
    expect(etcdTimeoutStatus()).toEqual({ ...failure, ...etcdTimeout });
    const apf = { reason: 'TooManyRequests', code: 429, details: { retryAfterSeconds: 1 } };
    expect(apfRejectedStatus(1)).toMatchObject({ ...failure, ...apf });
  });
});
