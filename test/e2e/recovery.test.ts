// End-to-end: the recovery cycle as a cluster lives it, with the real functions over HTTP, the
// Knative emulation routed by knative/, the source-watcher simulator and a real API server, on
// one virtual clock. Every assertion reads the state of the world (the API server, or the
// harness's watch of it); call counts come from the recording proxy.

import { describe, expect, it } from 'vitest';
import {
  ALARM_PRECISION_MS,
  BACKOFF_MS,
  EARLY_FORCE_OFFSETS_MS,
  EARLY_FORCE_WITHIN_MS,
  MINUTE,
  REASON_AWAITING,
  REASON_FORCED,
  REASON_STALLED,
  REFERENCE_FORCE_OFFSETS_MS,
  REQUESTED_AT,
  SECOND,
  agReady,
  createPair,
  psReady,
  psReasons,
  readAg,
  readAlarm,
  readPackageSource,
  readyCondition,
  report,
  seconds,
  startSystem,
  trackingCleared,
  type Condition,
} from './scenario-kit.js';

/**
 * The PackageSource's Ready is `expected`, with the AG's message and transition time (`ready`),
 * on the PackageSource's own generation.
 */
async function expectPsCarries(
  name: string,
  ready: Condition | undefined,
  expected: { status: string; reason: string },
): Promise<void> {
  const ps = await readPackageSource(name);
  expect(readyCondition(ps)).toEqual({
    type: 'Ready',
    ...expected,
    message: ready?.message,
    lastTransitionTime: ready?.lastTransitionTime,
    observedGeneration: ps?.metadata.generation,
  });
}

describe('e2e: recovery', () => {
  it('1. a lost Ready write is forced within seconds (early detection), rebuilt, and reported Ready=True on the AG and PackageSource', async () => {
    const system = await startSystem();
    const pair = await createPair(system, { lose: { times: 1 } });

    await system.runUntil(() => system.progress.of(pair.key).recoveries.length > 0, {
      maxVirtualMs: 3 * MINUTE,
      what: 'recovery',
    });

    const p = system.progress.of(pair.key);
    expect(p.stalls).toHaveLength(1);
    expect(p.forces.map((f) => f.attempt)).toEqual([1]);
    const stall = p.stalls[0] ?? NaN;
    const force = p.forces[0];
    expect(force?.bumpedAt).not.toBeNull();
    // The lost write itself is the signal: no grace period to wait out.
    expect((force?.claimedAt ?? NaN) - stall).toBeGreaterThanOrEqual(0);
    expect((force?.claimedAt ?? NaN) - stall).toBeLessThanOrEqual(EARLY_FORCE_WITHIN_MS);

    const ag = await readAg(pair.ref);
    const ready = readyCondition(ag);
    expect(ready).toMatchObject({
      status: 'True',
      reason: 'Succeeded',
      observedGeneration: ag?.metadata.generation,
    });
    expect(trackingCleared(ag)).toBe(true);
    // source-watcher handled our bump: it reconciled because of it.
    expect(ag?.metadata.annotations?.[REQUESTED_AT]).toBeDefined();
    expect(ag?.status?.lastHandledReconcileAt).toBe(ag?.metadata.annotations?.[REQUESTED_AT]);

    await expectPsCarries(pair.name, ready, { status: 'True', reason: 'Succeeded' });
    // While the window was open the PackageSource said so; our marker never reached it.
    const reasons = psReasons(system, pair.name);
    expect(reasons).toContain(REASON_AWAITING);
    expect(reasons).not.toContain(REASON_FORCED);
    expect(reasons).not.toContain(REASON_STALLED);

    report('1 lost Ready write', {
      stallToForced: seconds((force?.claimedAt ?? NaN) - stall),
      stallToRecovered: seconds((p.recoveries[0] ?? NaN) - stall),
    });
  });

  it.each([
    {
      // The first force comes at the lost write, before a test could stop source-watcher: here
      // it answers every force with a rebuild whose verdict is lost again.
      mode: 'never healing, early detection (defaults)',
      env: {},
      offsets: EARLY_FORCE_OFFSETS_MS,
      lose: {},
      dies: false,
    },
    {
      mode: 'dead, the reference time rule (RECOVERY_EARLY_DETECTION=off, RECOVERY_GRACE_PERIOD=30s)',
      env: { RECOVERY_EARLY_DETECTION: 'off', RECOVERY_GRACE_PERIOD: '30s' },
      offsets: REFERENCE_FORCE_OFFSETS_MS,
      lose: { times: 1 },
      dies: true,
    },
  ])(
    '2. source-watcher $mode: forces on time, then SourceWatcherStalled within 12.5 minutes',
    async ({ env, offsets: expectedOffsets, lose, dies }) => {
      const system = await startSystem({ env });
      const pair = await createPair(system, { lose });
      await system.runUntil(() => system.progress.of(pair.key).stalls.length >= 1, {
        maxVirtualMs: MINUTE,
        what: 'the stall',
      });
      if (dies) system.sim.setDead(true);

      await system.runUntil(() => system.progress.of(pair.key).stalledAt !== null, {
        maxVirtualMs: 14 * MINUTE,
        what: 'SourceWatcherStalled',
      });
      // One more resync and alarm round: nothing else happens after the verdict.
      await system.advance(6 * MINUTE);

      const p = system.progress.of(pair.key);
      const stall = p.stalls[0] ?? NaN;
      expect(p.forces.map((f) => f.attempt)).toEqual([1, 2, 3, 4, 5]);
      expect(p.bumps).toHaveLength(5);
      expect(p.forces.every((f) => f.bumpedAt !== null)).toBe(true);
      const offsets = p.forces.map((f) => f.claimedAt - stall);
      offsets.forEach((offset, i) => {
        const expected = expectedOffsets[i] ?? NaN;
        expect(offset, `force ${i + 1} at stall+${seconds(offset)}`).toBeGreaterThanOrEqual(
          expected - 4 * SECOND,
        );
        // Each force is due a backoff after the previous one, in whole seconds: up to 1 s of
        // lateness per earlier force adds up (how much depends on the stall's sub-second phase).
        expect(offset, `force ${i + 1} at stall+${seconds(offset)}`).toBeLessThanOrEqual(
          expected + 4 * SECOND + i * SECOND,
        );
      });
      for (let n = 1; n < p.forces.length; n++) {
        const gap = (p.forces[n]?.claimedAt ?? NaN) - (p.forces[n - 1]?.claimedAt ?? NaN);
        expect(gap, `gap after force ${n}`).toBeGreaterThanOrEqual(BACKOFF_MS[n] ?? NaN);
        expect(gap, `gap after force ${n}`).toBeLessThanOrEqual(
          (BACKOFF_MS[n] ?? NaN) + ALARM_PRECISION_MS,
        );
      }
      const lastForce = p.forces[4]?.claimedAt ?? NaN;
      const stalledAt = p.stalledAt ?? NaN;
      expect(stalledAt - lastForce).toBeGreaterThanOrEqual(BACKOFF_MS[5]);
      expect(stalledAt - stall).toBeLessThanOrEqual(12.5 * MINUTE);

      const ps = await readPackageSource(pair.name);
      const verdict = readyCondition(ps);
      expect(verdict).toMatchObject({
        status: 'False',
        reason: REASON_STALLED,
        observedGeneration: ps?.metadata.generation,
      });
      for (const words of [pair.name, '5 force-drift attempt', 'fluxcd/pkg#934', 'restart']) {
        expect(verdict?.message).toContain(words);
      }
      const ag = await readAg(pair.ref);
      expect(ag?.metadata.annotations?.['cozystack.io/source-watcher-recovery-attempts']).toBe('5');
      // Dead: our last marker is still there. Never healing: the last rebuild's verdict was lost.
      expect(readyCondition(ag)).toMatchObject(
        dies
          ? { status: 'False', reason: REASON_FORCED }
          : { status: 'Unknown', reason: 'Progressing' },
      );
      // Nothing left to follow up: no alarm.
      expect(await readAlarm()).toBeUndefined();

      report(
        dies
          ? '2 source-watcher dead (time rule)'
          : '2 source-watcher never heals (early detection)',
        {
          forcesAt: offsets.map(seconds).join(','),
          stallToStalled: seconds((p.stalledAt ?? NaN) - stall),
        },
      );
    },
  );

  it('3. a genuine failure (Ready=False BuildFailed) is passed through, with no force', async () => {
    const system = await startSystem();
    const created = system.clock.now();
    const pair = await createPair(system, { buildFailure: true });
    await system.runUntil(async () => (await psReady(pair.name))?.reason === 'BuildFailed', {
      maxVirtualMs: 2 * MINUTE,
      what: 'BuildFailed on the PackageSource',
    });
    await system.advance(5 * MINUTE);
    // source-watcher keeps retrying (Unknown while it rebuilds): compare at a moment it is False.
    await system.runUntil(async () => (await agReady(pair.ref))?.status === 'False', {
      maxVirtualMs: 20 * MINUTE,
      stepMs: SECOND,
      what: 'Ready=False on the AG',
    });

    const agCondition = await agReady(pair.ref);
    expect(agCondition).toMatchObject({ status: 'False', reason: 'BuildFailed' });
    await expectPsCarries(pair.name, agCondition, { status: 'False', reason: 'BuildFailed' });
    expect(
      system.sim.reconcilesOf(pair.key).filter((r) => r.outcome === 'BuildFailed').length,
    ).toBeGreaterThan(3);
    expect(system.progress.of(pair.key).forces).toEqual([]);
    expect(system.writesBy('force-drift')).toEqual([]);
    const ag = await readAg(pair.ref);
    expect(trackingCleared(ag)).toBe(true);
    expect(ag?.metadata.annotations?.[REQUESTED_AT]).toBeUndefined();
    // ArtifactGeneratorNotReady: the new AG had no Ready yet (as the reference driver says).
    for (const reason of psReasons(system, pair.name)) {
      expect(['ArtifactGeneratorNotReady', 'Progressing', 'BuildFailed']).toContain(reason);
    }

    report('3 genuine failure', {
      createdToPassedThrough: seconds(
        (system.progress.packageSourceVersions(pair.name).find((v) => v.reason === 'BuildFailed')
          ?.at ?? NaN) - created,
      ),
      forces: 0,
    });
  });

  it('4. normal rebuilds shorter than the grace period are never forced', async () => {
    const buildTimeMs = 25 * SECOND;
    const system = await startSystem({ sourceWatcher: { buildTimeMs } });
    const pair = await createPair(system);
    await system.runUntil(async () => (await psReady(pair.name))?.status === 'True', {
      maxVirtualMs: 2 * MINUTE,
      what: 'the first build',
    });
    for (const revision of ['v2', 'v3', 'v4']) {
      system.sim.setSourceRevision(pair.key, revision);
      await system.advance(2 * MINUTE);
    }

    const builds = system.sim.reconcilesOf(pair.key).filter((r) => r.outcome === 'Built');
    expect(builds).toHaveLength(4);
    expect(system.progress.of(pair.key).forces).toEqual([]);
    expect(system.writesBy('force-drift')).toEqual([]);
    // Each rebuild kept Ready Unknown for the whole build time, just under the grace period.
    const versions = system.progress.agVersions(pair.key);
    const longestUnknownMs = Math.max(
      ...versions.map((v, i) => {
        if (v.status !== 'Unknown') return 0;
        const next = versions.slice(i + 1).find((w) => w.status !== 'Unknown');
        return (next?.at ?? v.at) - v.at;
      }),
    );
    expect(longestUnknownMs).toBeGreaterThanOrEqual(buildTimeMs);
    const ag = await readAg(pair.ref);
    expect(readyCondition(ag)).toMatchObject({ status: 'True', reason: 'Succeeded' });
    expect(trackingCleared(ag)).toBe(true);
    expect(ag?.metadata.annotations?.[REQUESTED_AT]).toBeUndefined();
    expect(await psReady(pair.name)).toMatchObject({ status: 'True', reason: 'Succeeded' });
    for (const reason of psReasons(system, pair.name)) {
      expect(['ArtifactGeneratorNotReady', 'Progressing', 'Succeeded']).toContain(reason);
    }

    report('4 normal rebuilds', {
      rebuilds: builds.length,
      buildTime: seconds(buildTimeMs),
      forces: 0,
    });
  });

  it('10. an AG with no PackageSource is still recovered, with no PackageSource write', async () => {
    const system = await startSystem();
    const pair = await createPair(system, { lose: { times: 1 }, bare: true });
    await system.runUntil(() => system.progress.of(pair.key).recoveries.length > 0, {
      maxVirtualMs: 3 * MINUTE,
      what: 'recovery',
    });

    const p = system.progress.of(pair.key);
    expect(p.packageSource).toBeNull();
    expect(p.forces.map((f) => f.attempt)).toEqual([1]);
    const ag = await readAg(pair.ref);
    expect(readyCondition(ag)).toMatchObject({ status: 'True', reason: 'Succeeded' });
    expect(trackingCleared(ag)).toBe(true);
    expect(system.writesBy('surface-stalled')).toEqual([]);
    // surface-stalled did look at it (it received the AG's events and read it).
    expect(system.proxy.count({ clientTag: 'surface-stalled', name: pair.name })).toBeGreaterThan(
      0,
    );

    report('10 AG without PackageSource', {
      stallToRecovered: seconds((p.recoveries[0] ?? NaN) - (p.stalls[0] ?? NaN)),
      packageSourceWrites: 0,
    });
  });
});

describe('e2e: an idle cluster', () => {
  it('after everything is healthy, one virtual hour of resyncs makes no write and leaves no alarm', async () => {
    const system = await startSystem();
    const pairs = [
      await createPair(system, { lose: { times: 1 } }),
      await createPair(system),
      await createPair(system, { bare: true }),
    ];
    await system.runUntil(
      async () => {
        for (const pair of pairs) {
          const ag = await readAg(pair.ref);
          if (readyCondition(ag)?.status !== 'True' || !trackingCleared(ag)) return false;
        }
        return (await readAlarm()) === undefined;
      },
      { maxVirtualMs: 5 * MINUTE, what: 'a healthy cluster without an alarm' },
    );
    expect(system.progress.of(pairs[0]?.key ?? '').recoveries).toHaveLength(1);

    const callsBefore = system.proxy.calls.length;
    const resyncsBefore = system.knative.pings.firesOf('source-watcher-recovery', 'resync').length;
    await system.advance(60 * MINUTE);

    const hour = system.proxy.calls.slice(callsBefore);
    const writes = hour.filter((c) => ['create', 'update', 'patch', 'delete'].includes(c.verb));
    expect(writes).toEqual([]);
    const resyncs =
      system.knative.pings.firesOf('source-watcher-recovery', 'resync').length - resyncsBefore;
    expect(resyncs).toBe(12);
    // Both sweepers really ran: they listed the AGs at every resync.
    for (const fn of ['detect', 'surface-stalled']) {
      const lists = hour.filter(
        (c) => c.clientTag === fn && c.verb === 'list' && c.resource === 'artifactgenerators',
      );
      expect(lists.length).toBeGreaterThanOrEqual(12);
    }
    expect(await readAlarm()).toBeUndefined();
    for (const pair of pairs) expect(await agReady(pair.ref)).toMatchObject({ status: 'True' });

    report('idle hour', { resyncs, writes: writes.length });
  });
});
