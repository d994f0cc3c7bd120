// End-to-end: recovery meeting the rest of the world: a spec edit or a deletion in the middle of
// a recovery, AGs that were stuck before the install, and the observe-only mode.

import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../harness/virtual-clock.js';
import { createSourceWatcherSim } from '../harness/source-watcher-sim/index.js';
import { deleteAg } from '../harness/system/world.js';
import { MERGE_PATCH, createOwnedPair, customObjects, uniqueName } from '../support/apiserver.js';
import { AG_RESOURCE } from '../harness/knative/index.js';
import {
  AG_NAMESPACE,
  ATTEMPTS,
  MINUTE,
  REASON_AWAITING,
  REQUESTED_AT,
  SECOND,
  agReady,
  createPair,
  kc,
  psReady,
  readAg,
  readAlarm,
  readyCondition,
  report,
  resetWorld,
  seconds,
  startSystem,
  trackingCleared,
} from './scenario-kit.js';

const FUNCTIONS = ['detect', 'force-drift', 'surface-stalled'] as const;

describe('e2e: disruptions during recovery', () => {
  it('5. a spec edit during recovery: source-watcher rebuilds the new generation, tracking is cleared', async () => {
    const system = await startSystem();
    // The first build and the forced rebuild both lose their verdict: still stuck after force 1.
    const pair = await createPair(system, { lose: { times: 2 } });
    await system.runUntil(
      () => {
        const p = system.progress.of(pair.key);
        return p.forces.length === 1 && p.stalls.length === 2;
      },
      { maxVirtualMs: 2 * MINUTE, stepMs: SECOND, what: 'the forced rebuild losing its verdict' },
    );
    const editedAt = system.clock.now();
    const before = await readAg(pair.ref);
    expect(before?.metadata.annotations?.[ATTEMPTS]).toBe('1');
    await customObjects(kc).patchNamespacedCustomObject(
      {
        ...AG_RESOURCE,
        ...pair.ref,
        body: {
          spec: {
            artifacts: [
              { name: pair.name, copy: [{ from: '@src/**', to: '@artifact/' }] },
              { name: `${pair.name}-extra`, copy: [{ from: '@src/extra/**', to: '@artifact/' }] },
            ],
          },
        },
      },
      MERGE_PATCH,
    );

    await system.runUntil(() => system.progress.of(pair.key).recoveries.length > 0, {
      maxVirtualMs: 3 * MINUTE,
      what: 'recovery after the edit',
    });

    const p = system.progress.of(pair.key);
    // The edit made source-watcher rebuild; no second force was needed.
    expect(p.forces.map((f) => f.attempt)).toEqual([1]);
    const rebuilt = system.sim
      .reconcilesOf(pair.key)
      .filter((r) => r.at >= editedAt && r.outcome === 'Built');
    expect(rebuilt.map((r) => r.drift)).toContain('GenerationChanged');
    const ag = await readAg(pair.ref);
    expect(ag?.metadata.generation).toBe(2);
    expect(readyCondition(ag)).toMatchObject({
      status: 'True',
      reason: 'Succeeded',
      observedGeneration: 2,
    });
    expect(ag?.status?.inventory).toHaveLength(2);
    expect(trackingCleared(ag)).toBe(true);
    expect(await psReady(pair.name)).toMatchObject({ status: 'True', reason: 'Succeeded' });

    report('5 spec edit during recovery', {
      stallToRecovered: seconds((p.recoveries[0] ?? NaN) - (p.stalls[0] ?? NaN)),
      editToRecovered: seconds((p.recoveries[0] ?? NaN) - editedAt),
      forces: p.forces.length,
    });
  });

  it('6. an AG deleted during recovery: no errors, no writes to it after deletion, no orphan alarm', async () => {
    const system = await startSystem({ logLevel: 'warn' });
    // source-watcher stays alive (it removes its finalizer) but never records a verdict.
    const pair = await createPair(system, { lose: {} });
    await system.runUntil(
      () => {
        const p = system.progress.of(pair.key);
        return p.forces.length === 1 && p.stalls.length === 2;
      },
      { maxVirtualMs: 2 * MINUTE, stepMs: SECOND, what: 'a recovery in progress' },
    );
    expect(await readAlarm()).toBeDefined();
    const deletedAt = system.clock.now();
    const callsBefore = system.proxy.calls.length;
    const deliveriesBefore = system.knative.broker.deliveries.length;
    const logsBefore = system.logs.records.length;
    await deleteAg(kc, pair.ref);
    await system.runUntil(async () => (await readAg(pair.ref)) === undefined, {
      maxVirtualMs: MINUTE,
      stepMs: SECOND,
      what: 'the AG gone',
    });
    // Past the end of the backoff window (the alarm) and a resync.
    await system.advance(6 * MINUTE);

    const after = system.proxy.calls.slice(callsBefore);
    const writesToIt = after.filter(
      (c) =>
        (FUNCTIONS as readonly string[]).includes(c.clientTag) &&
        c.resource === 'artifactgenerators' &&
        c.name === pair.name &&
        c.verb !== 'get',
    );
    expect(writesToIt).toEqual([]);
    const deliveries = system.knative.broker.deliveries.slice(deliveriesBefore);
    expect(deliveries.length).toBeGreaterThan(0);
    expect(deliveries.filter((d) => d.outcome !== 'delivered')).toEqual([]);
    expect(system.knative.broker.deadLetters).toEqual([]);
    expect(system.logs.records.slice(logsBefore)).toEqual([]);
    expect(system.progress.of(pair.key).forces).toHaveLength(1);
    expect(await readAlarm()).toBeUndefined();

    report('6 AG deleted during recovery', {
      deletedAfterStall: seconds(deletedAt - (system.progress.of(pair.key).stalls[0] ?? NaN)),
      writesAfterDeletion: writesToIt.length,
    });
  });

  it('9. AGs stuck before the install (no add events) are found by the resync', async () => {
    await resetWorld();
    // Before the install: source-watcher alone loses the Ready write of two AGs.
    const preClock = new VirtualClock({ start: Math.floor(Date.now() / 1000) * 1000 });
    const preSim = createSourceWatcherSim({ kubeConfig: kc, clock: preClock });
    preClock.setSettle(() => preSim.settled());
    await preSim.start();
    const names = [uniqueName('pre'), uniqueName('pre')];
    for (const name of names) {
      preSim.loseConditionsWrite(`${AG_NAMESPACE}/${name}`, { times: 1 });
      const { artifactGenerator } = await createOwnedPair({ name }, kc);
      await preSim.observed(artifactGenerator.metadata?.resourceVersion ?? '');
    }
    // Past the grace period: they are stuck when the system is installed.
    await preClock.advance(40 * SECOND);
    await preSim.stop();
    expect(preSim.stats.lostWrites).toBe(2);
    for (const name of names) {
      const ag = await readAg({ namespace: AG_NAMESPACE, name });
      expect(readyCondition(ag)).toMatchObject({ status: 'Unknown', reason: 'Progressing' });
      expect(ag?.status?.inventory?.length).toBeGreaterThan(0);
    }

    const system = await startSystem({ startMs: preClock.now() }, { keepWorld: true });
    const keys = names.map((n) => `${AG_NAMESPACE}/${n}`);
    await system.runUntil(() => keys.every((k) => system.progress.of(k).recoveries.length > 0), {
      maxVirtualMs: 8 * MINUTE,
      what: 'both recovered',
    });

    const resync = system.knative.pings.firesOf('source-watcher-recovery', 'resync')[0];
    expect(resync).toBeDefined();
    const resyncAt = resync?.firedAt ?? NaN;
    const sent = system.knative.apiServerSource.sent;
    for (const [i, key] of keys.entries()) {
      const p = system.progress.of(key);
      expect(p.forces.map((f) => f.attempt)).toEqual([1]);
      // Found by the sweep: forced right after the first resync tick, not before.
      const forcedAt = p.forces[0]?.claimedAt ?? NaN;
      expect(forcedAt).toBeGreaterThanOrEqual(resyncAt);
      expect(forcedAt - resyncAt).toBeLessThan(2 * SECOND);
      // The ApiServerSource sent nothing about it until the force changed it.
      const first = sent.find((s) => s.event.subject?.endsWith(`/${names[i] ?? ''}`));
      expect(Date.parse(first?.event.time ?? '')).toBeGreaterThanOrEqual(forcedAt);
      const ag = await readAg({ namespace: AG_NAMESPACE, name: names[i] ?? '' });
      expect(readyCondition(ag)).toMatchObject({ status: 'True', reason: 'Succeeded' });
      expect(trackingCleared(ag)).toBe(true);
      expect(await psReady(names[i] ?? '')).toMatchObject({ status: 'True' });
    }

    report('9 stuck before install', {
      installToResync: seconds(resyncAt - preClock.now()),
      resyncToRecovered: seconds(
        Math.max(...keys.map((k) => system.progress.of(k).recoveries[0] ?? NaN)) - resyncAt,
      ),
    });
  });

  it('11. RECOVERY_MODE=observe decides and reports but writes nothing', async () => {
    const system = await startSystem({ env: { RECOVERY_MODE: 'observe' }, logLevel: 'info' });
    const pair = await createPair(system, { lose: { times: 1 } });
    // surface-stalled sees the stall past its grace (2m30s) at the first resync after it: with the
    // 5-minute resync at any phase of the clock that is at most 7m40s in (7 minutes missed it when
    // the run started 2m40s into a resync period).
    await system.advance(8 * MINUTE);

    expect(system.progress.of(pair.key).stalls).toHaveLength(1);
    for (const resource of ['artifactgenerators', 'packagesources']) {
      expect(system.writesBy(FUNCTIONS, { resource })).toEqual([]);
    }
    const ag = await readAg(pair.ref);
    expect(readyCondition(ag)).toMatchObject({ status: 'Unknown', reason: 'Progressing' });
    expect(trackingCleared(ag)).toBe(true);
    expect(ag?.metadata.annotations?.[REQUESTED_AT]).toBeUndefined();
    expect(system.progress.of(pair.key).forces).toEqual([]);
    expect(await psReady(pair.name)).toBeUndefined();
    // It decided, and said so.
    const wouldForce = system.logs.find('would force', 'force-drift');
    expect(wouldForce.length).toBeGreaterThan(0);
    expect(wouldForce[0]).toMatchObject({ namespace: AG_NAMESPACE, name: pair.name, attempt: 1 });
    const wouldUpdate = system.logs.find('would update PackageSource Ready', 'surface-stalled');
    expect(wouldUpdate.map((r) => r['reason'])).toContain(REASON_AWAITING);
    expect(await agReady(pair.ref)).toMatchObject({ status: 'Unknown' });

    report('11 observe mode', {
      wouldForce: wouldForce.length,
      agWrites: 0,
      packageSourceWrites: 0,
    });
  });
});
