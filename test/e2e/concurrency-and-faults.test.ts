// End-to-end: the properties the reference driver lacks. Any number of replicas with duplicated,
// reordered delivery still forces at most once per window; API-server faults on every kind of
// write forge nothing and recovery completes once they stop.

import { describe, expect, it } from 'vitest';
import type { CallMatch, FaultRule } from '../support/kube-proxy.js';
import {
  BACKOFF_MS,
  MINUTE,
  REASON_FORCED,
  REASON_STALLED,
  createPair,
  psReady,
  psReasons,
  readAg,
  readyCondition,
  report,
  seconds,
  startSystem,
  trackingCleared,
  type Pair,
  type System,
} from './scenario-kit.js';

/** `clientTag`'s patches of `resource` (its main resource when `subresource` is ''). */
const patchesBy = (clientTag: string, resource: string, subresource: string): CallMatch => ({
  clientTag,
  verb: 'patch',
  resource,
  subresource,
});

/** Successful marker writes (Ready=False/SourceWatcherRecoveryForced) on one AG, from the proxy. */
function markerWrites(system: System, pair: Pair): number {
  return system.proxy
    .callsMatching({ ...patchesBy('force-drift', 'artifactgenerators', 'status'), name: pair.name })
    .filter((c) => c.status !== undefined && c.status >= 200 && c.status < 300).length;
}

describe('e2e: replicas and duplicated, reordered delivery', () => {
  it('7. three replicas of each function force at most once per window', async () => {
    const system = await startSystem({
      replicas: 3,
      // Round-robin: a duplicate goes to the next replica, so copies race across replicas.
      broker: { duplicateProbability: 0.5, reorderMaxDelayMs: 25, seed: 11 },
    });
    const cases: [Pair, number][] = [
      [await createPair(system, { lose: { times: 1 }, prefix: 'once' }), 1],
      [await createPair(system, { lose: { times: 2 }, prefix: 'twice' }), 2],
      [await createPair(system, { lose: {}, prefix: 'never' }), 5],
    ];
    const never = cases[2]?.[0];
    await system.runUntil(
      () =>
        system.progress.of(never?.key ?? '').stalledAt !== null &&
        cases.slice(0, 2).every(([p]) => system.progress.of(p.key).recoveries.length === 1),
      { maxVirtualMs: 14 * MINUTE, what: 'two recoveries and one verdict' },
    );

    for (const [pair, expected] of cases) {
      const p = system.progress.of(pair.key);
      expect(p.forces.map((f) => f.attempt)).toEqual(
        Array.from({ length: expected }, (_, i) => i + 1),
      );
      expect(p.bumps).toHaveLength(expected);
      expect(markerWrites(system, pair)).toBe(expected);
      for (let n = 1; n < p.forces.length; n++) {
        const gap = (p.forces[n]?.claimedAt ?? NaN) - (p.forces[n - 1]?.claimedAt ?? NaN);
        expect(gap).toBeGreaterThanOrEqual(BACKOFF_MS[n] ?? NaN);
      }
      expect(psReasons(system, pair.name)).not.toContain(REASON_FORCED);
    }
    const neverPs = await psReady(never?.name ?? '');
    expect(neverPs).toMatchObject({ status: 'False', reason: REASON_STALLED });
    // The delivery really was duplicated and spread over every replica.
    const broker = system.knative.broker;
    expect(broker.stats.duplicated).toBeGreaterThan(10);
    for (const fn of ['detect', 'force-drift', 'surface-stalled']) {
      const urls = new Set(broker.deliveries.filter((d) => d.subscriber === fn).map((d) => d.url));
      expect(urls.size, fn).toBe(3);
    }
    const conflicts = system.proxy
      .callsMatching({ clientTag: 'force-drift' })
      .filter((c) => c.status === 409).length;

    report('7 three replicas, duplicated and reordered', {
      forces: cases.map(([p]) => system.progress.of(p.key).forces.length).join('/'),
      duplicated: broker.stats.duplicated,
      forceDriftConflicts: conflicts,
      stallToStalled: seconds(
        (system.progress.of(never?.key ?? '').stalledAt ?? NaN) -
          (system.progress.of(never?.key ?? '').stalls[0] ?? NaN),
      ),
    });
  });
});

const WRITES: [string, CallMatch][] = [
  ['AG annotations patch', patchesBy('force-drift', 'artifactgenerators', '')],
  ['AG status patch', patchesBy('force-drift', 'artifactgenerators', 'status')],
  ['PackageSource status patch', patchesBy('surface-stalled', 'packagesources', 'status')],
  [
    'PingSource writes',
    { clientTag: 'detect', resource: 'pingsources', verb: ['create', 'patch', 'delete'] },
  ],
];

const FAULTS: [string, FaultRule][] = [
  ['500 Internal Server Error', { kind: 'status', status: 500 }],
  ['429 Too Many Requests', { kind: 'status', status: 429 }],
  ['a timeout after the write was applied', { kind: 'timeout', phase: 'after' }],
  ['a dropped connection', { kind: 'reset' }],
  ['a dropped connection after the write was applied', { kind: 'reset', phase: 'after' }],
];
const HITS_PER_KIND = 2;

describe('e2e: API-server faults on every kind of write', () => {
  it.each(FAULTS)(
    '8. %s: no forged state, and recovery completes once the faults stop',
    async (label, fault) => {
      const system = await startSystem({ env: { KUBE_REQUEST_TIMEOUT_MS: '1000' } });
      const handles = WRITES.map(
        ([kind, match]) =>
          [kind, system.proxy.addFault({ ...fault, match, times: HITS_PER_KIND })] as const,
      );
      const pair = await createPair(system, { lose: { times: 1 } });
      await system.runUntil(() => system.progress.of(pair.key).recoveries.length > 0, {
        maxVirtualMs: 8 * MINUTE,
        what: 'recovery',
      });

      // Every kind of write was hit, then the faults stopped. A refused write is retried until
      // the faults run out; a write that was applied (its answer lost) is not repeated.
      for (const [kind, handle] of handles) {
        if ('phase' in fault && fault.phase === 'after')
          expect(handle.applied, kind).toBeGreaterThanOrEqual(1);
        else expect(handle.applied, kind).toBe(HITS_PER_KIND);
      }
      const p = system.progress.of(pair.key);
      expect(p.forces.map((f) => f.attempt)).toEqual([1]);
      expect(markerWrites(system, pair)).toBeLessThanOrEqual(1);
      // Nothing forged: every Ready=True the AG ever had was source-watcher's own build.
      const trueVersions = system.progress.agVersions(pair.key).filter((v) => v.status === 'True');
      expect(trueVersions.length).toBeGreaterThan(0);
      for (const v of trueVersions) expect(v.reason).toBe('Succeeded');
      const reasons = psReasons(system, pair.name);
      expect(reasons).not.toContain(REASON_FORCED);
      expect(reasons).not.toContain(REASON_STALLED);

      const ag = await readAg(pair.ref);
      const ready = readyCondition(ag);
      expect(ready).toMatchObject({ status: 'True', reason: 'Succeeded' });
      expect(trackingCleared(ag)).toBe(true);
      expect(ag?.status?.lastHandledReconcileAt).toBe(
        ag?.metadata.annotations?.['reconcile.fluxcd.io/requestedAt'],
      );
      expect(await psReady(pair.name)).toMatchObject({
        status: 'True',
        reason: 'Succeeded',
        lastTransitionTime: ready?.lastTransitionTime,
      });

      report(`8 faults: ${label}`, {
        injected: handles.map(([, h]) => h.applied).reduce((a, b) => a + b, 0),
        stallToRecovered: seconds((p.recoveries[0] ?? NaN) - (p.stalls[0] ?? NaN)),
        deadLettered: system.knative.broker.stats.deadLettered,
      });
    },
  );
});
