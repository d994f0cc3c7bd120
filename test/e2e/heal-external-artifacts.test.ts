// End to end: heal-external-artifacts with the source-watcher simulator generating and owning
// ExternalArtifacts (docs/adr/0039), the ApiServerSource on ExternalArtifacts and the Broker routed
// by the Triggers of knative/functions/heal-external-artifacts, against the real kube-apiserver
// (docs/adr/0038). Scenarios: a deleted ExternalArtifact (and the control without the function),
// a digest changed by hand (the foreign field manager that makes a bump alone fail the AG),
// honest rebuilds (no bump), three replicas with duplicated and reordered delivery (one bump per
// drift), and the delete -> re-create latency on the real clock.

import { beforeEach, describe, expect, it } from 'vitest';
import {
  createArtifactGenerator,
  makeArtifactGenerator,
  uniqueName,
} from '../support/apiserver.js';
import {
  AG_NAMESPACE,
  MINUTE,
  SECOND,
  agReady,
  createPair,
  kc,
  readAg,
  readyCondition,
  report,
  seconds,
  startSystem,
  type System,
} from './scenario-kit.js';
import { deleteAllEas, deleteEa, readEa, setDigestByHand } from './external-artifacts.js';

const HEAL = 'heal-external-artifacts';

// ExternalArtifacts left by earlier scenarios (their AGs are gone) must not be listed as ours.
beforeEach(deleteAllEas);

function start(
  opts: { replicas?: number; env?: Record<string, string>; duplicates?: boolean } = {},
) {
  return startSystem({
    replicas: opts.replicas ?? 1,
    sourceWatcher: { externalArtifacts: true },
    ...(opts.env !== undefined ? { env: opts.env } : {}),
    ...(opts.duplicates === true
      ? {
          broker: {
            duplicateProbability: 0.5,
            reorderMaxDelayMs: 30,
            seed: 23,
            replicaPick: 'random' as const,
          },
        }
      : {}),
  });
}

/** n settled AGs, each with its one ExternalArtifact (named like the AG), in step. */
async function settledAgs(system: System, n: number, prefix: string): Promise<string[]> {
  const names: string[] = [];
  for (let i = 0; i < n; i++) {
    const name = uniqueName(prefix);
    await createArtifactGenerator(makeArtifactGenerator({ name }), kc);
    names.push(name);
  }
  await system.runUntil(async () => (await Promise.all(names.map(inStep))).every(Boolean), {
    maxVirtualMs: 2 * MINUTE,
    what: 'every AG built with its ExternalArtifact',
  });
  return names;
}

/** Ready=True on its generation and the ExternalArtifact's digest equal to the inventory's. */
async function inStep(name: string): Promise<boolean> {
  const ag = await readAg({ namespace: AG_NAMESPACE, name });
  const ready = readyCondition(ag);
  if (ready?.status !== 'True' || ready.observedGeneration !== ag?.metadata.generation)
    return false;
  const entry = (ag?.status?.inventory as { name: string; digest: string }[] | undefined)?.[0];
  const ea = await readEa(name);
  return entry !== undefined && ea?.status?.artifact?.digest === entry.digest;
}

/** The heal's successful requestedAt bumps of this AG. */
function bumpsOf(system: System, name: string): number {
  return system
    .writesBy(HEAL, { resource: 'artifactgenerators', verb: 'patch', name })
    .filter((c) => c.status === 200).length;
}

describe('e2e: heal-external-artifacts', () => {
  it('a deleted ExternalArtifact is re-created by source-watcher at once; without the function it stays gone for the hour', async () => {
    const system = await start();
    const [name = ''] = await settledAgs(system, 1, 'ea-del');
    const uid = (await readEa(name))?.metadata.uid;
    await deleteEa(name);
    const deletedAt = system.clock.now();
    const healedAt = await system.runUntil(() => inStep(name), {
      maxVirtualMs: MINUTE,
      stepMs: 100,
      what: 'the ExternalArtifact re-created',
    });
    expect((await readEa(name))?.metadata.uid).not.toBe(uid);
    expect(bumpsOf(system, name)).toBe(1);
    expect(system.sim.reconcilesOf(`${AG_NAMESPACE}/${name}`).at(-1)).toMatchObject({
      outcome: 'Built',
      drift: 'ExternalArtifactsDiffer',
    });
    report('heal: deleted ExternalArtifact', {
      reCreatedAfter: seconds(healedAt - deletedAt),
      bumps: bumpsOf(system, name),
    });
  });

  it('control: with RECOVERY_HEAL_EXTERNAL_ARTIFACTS=off the deleted ExternalArtifact is still gone 55 minutes later', async () => {
    const system = await start({ env: { RECOVERY_HEAL_EXTERNAL_ARTIFACTS: 'off' } });
    const [name = ''] = await settledAgs(system, 1, 'ea-off');
    await deleteEa(name);
    await system.advance(55 * MINUTE);
    expect(await readEa(name)).toBeUndefined();
    expect(system.writesBy(HEAL)).toEqual([]);
  });

  it('a digest changed by hand (kubectl patch keeps owning it): re-created, Ready never goes False, one bump', async () => {
    const system = await start();
    const [name = ''] = await settledAgs(system, 1, 'ea-dig');
    const before = (await readEa(name))?.status?.artifact?.digest;
    await setDigestByHand(name, 'kubectl-patch', 'e');
    const changedAt = system.clock.now();
    const healedAt = await system.runUntil(() => inStep(name), {
      maxVirtualMs: MINUTE,
      stepMs: 100,
      what: 'the digest restored',
    });
    const ea = await readEa(name);
    expect(ea?.status?.artifact?.digest).toBe(before);
    expect(ea?.metadata.managedFields?.map((m) => m.manager)).not.toContain('kubectl-patch');
    // Never worse than before: no failed reconcile, Ready stayed True or Unknown (building).
    const reconciles = system.sim.reconcilesOf(`${AG_NAMESPACE}/${name}`);
    expect(reconciles.filter((r) => r.outcome === 'ReconciliationFailed')).toEqual([]);
    const readies = system.progress.agVersions(`${AG_NAMESPACE}/${name}`).map((v) => v.status);
    expect(readies).not.toContain('False');
    expect(bumpsOf(system, name)).toBe(1);
    expect(
      system
        .writesBy(HEAL, { resource: 'externalartifacts', verb: 'delete' })
        .filter((c) => c.status === 200),
    ).toHaveLength(1);
    report('heal: digest changed by hand', {
      healedAfter: seconds(healedAt - changedAt),
      bumps: bumpsOf(system, name),
    });
  });

  it('honest rebuilds: 0 bumps over 120 rebuilds (new source revisions, duplicated and reordered events)', async () => {
    const system = await start({ replicas: 2, duplicates: true });
    const names = await settledAgs(system, 12, 'ea-honest');
    const built = (): number =>
      names.reduce(
        (n, name) =>
          n +
          system.sim.reconcilesOf(`${AG_NAMESPACE}/${name}`).filter((r) => r.outcome === 'Built')
            .length,
        0,
      );
    const builtBefore = built();
    const deliveriesBefore = system.knative.broker.deliveries.filter(
      (d) => d.subscriber === HEAL,
    ).length;
    for (let round = 1; round <= 10; round++) {
      for (const name of names)
        system.sim.setSourceRevision(`${AG_NAMESPACE}/${name}`, `rev-${round}`);
      await system.runUntil(async () => (await Promise.all(names.map(inStep))).every(Boolean), {
        maxVirtualMs: MINUTE,
        stepMs: 200,
        what: `round ${round} rebuilt`,
      });
    }
    const rebuilds = built() - builtBefore;
    const healDeliveries =
      system.knative.broker.deliveries.filter((d) => d.subscriber === HEAL).length -
      deliveriesBefore;
    expect(rebuilds).toBeGreaterThanOrEqual(120);
    // The function saw the builds' ExternalArtifact updates and left every one alone.
    expect(healDeliveries).toBeGreaterThanOrEqual(120);
    expect(system.writesBy(HEAL)).toEqual([]);
    report('heal: honest rebuilds', { rebuilds, healDeliveries, bumps: 0 });
  });

  it('three replicas, duplicated and reordered delivery: exactly one bump per drift, every ExternalArtifact healed', async () => {
    const system = await start({ replicas: 3, duplicates: true });
    const names = await settledAgs(system, 10, 'ea-rep');
    for (const [i, name] of names.entries()) {
      if (i % 2 === 0) await deleteEa(name);
      else await setDigestByHand(name, 'kubectl-edit', 'd');
    }
    await system.runUntil(async () => (await Promise.all(names.map(inStep))).every(Boolean), {
      maxVirtualMs: 2 * MINUTE,
      stepMs: 200,
      what: 'every drift healed',
    });
    await system.advance(30 * SECOND);
    const perAg = names.map((n) => bumpsOf(system, n));
    expect(perAg).toEqual(names.map(() => 1));
    const heals = system.functions.filter((f) => f.name === HEAL).length;
    expect(heals).toBe(3);
    const duplicates = system.knative.broker.stats;
    report('heal: 3 replicas', {
      drifts: names.length,
      bumps: perAg.reduce((a, b) => a + b, 0),
      maxBumpsPerDrift: Math.max(...perAg),
      brokerStats: JSON.stringify(duplicates),
    });
  });

  it('respects the recovery: no bump while force-drift works on the AG; its forced rebuild re-creates the ExternalArtifact', async () => {
    const system = await start();
    // A lost Ready write on the first build, and builds long enough to act inside the recovery.
    const pair = await createPair(system, {
      bare: true,
      lose: { times: 1 },
      prefix: 'ea-rec',
      beforeCreate: (key) => system.sim.setBuildTimeOf(key, 10 * SECOND),
    });
    await system.runUntil(() => system.progress.of(pair.key).forces.length === 1, {
      maxVirtualMs: MINUTE,
      stepMs: 500,
      what: 'the first force',
    });
    await deleteEa(pair.name);
    await system.advance(2 * SECOND);
    // The delete reached the function, which left the AG to the recovery.
    expect(
      system.knative.broker.deliveries.filter(
        (d) => d.trigger === 'heal-external-artifacts-delete',
      ),
    ).not.toEqual([]);
    expect(system.writesBy(HEAL)).toEqual([]);
    await system.runUntil(
      async () => system.progress.of(pair.key).recoveries.length === 1 && (await inStep(pair.name)),
      { maxVirtualMs: 2 * MINUTE, stepMs: 500, what: 'recovered, the ExternalArtifact back' },
    );
    expect(system.progress.of(pair.key).forces).toHaveLength(1);
    expect(system.writesBy(HEAL)).toEqual([]);
  });

  it('the rebuild its bump asked for loses its Ready write (fluxcd/pkg#934): the recovery forces it as its own attempt 1 and it recovers', async () => {
    const system = await start();
    const [name = ''] = await settledAgs(system, 1, 'ea-934');
    const key = `${AG_NAMESPACE}/${name}`;
    system.sim.loseConditionsWrite(key, { times: 1 });
    await deleteEa(name);
    await system.runUntil(
      async () => system.progress.of(key).recoveries.length === 1 && (await inStep(name)),
      { maxVirtualMs: 3 * MINUTE, stepMs: 500, what: 'forced, recovered and in step' },
    );
    expect(bumpsOf(system, name)).toBe(1);
    expect(system.progress.of(key).forces.map((f) => f.attempt)).toEqual([1]);
    expect((await agReady({ namespace: AG_NAMESPACE, name }))?.status).toBe('True');
    // Healthy again, the tracking is gone, and the heal made no second bump.
    await system.advance(MINUTE);
    expect(bumpsOf(system, name)).toBe(1);
  });

  it('real clock: deleted ExternalArtifact -> re-created, p99 within 5 s', async () => {
    const system = await start();
    const names = await settledAgs(system, 20, 'ea-rt');
    const latencies: number[] = [];
    // Virtual time follows the real clock from here on: every delay is spent for real.
    let pumping = true;
    const origin = Date.now();
    const virtualOrigin = system.clock.now();
    const pump = (async () => {
      while (pumping) {
        const target = virtualOrigin + (Date.now() - origin);
        if (target > system.clock.now()) await system.clock.advanceTo(target);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    try {
      for (const name of names) {
        const uid = (await readEa(name))?.metadata.uid;
        const t0 = performance.now();
        await deleteEa(name);
        for (;;) {
          const ea = await readEa(name);
          if (
            ea !== undefined &&
            ea.metadata.uid !== uid &&
            ea.status?.artifact?.digest !== undefined
          )
            break;
          if (performance.now() - t0 > 30_000)
            throw new Error(`${name}: not re-created within 30 s`);
          await new Promise((r) => setTimeout(r, 10));
        }
        latencies.push(performance.now() - t0);
      }
    } finally {
      pumping = false;
      await pump;
    }
    const sorted = [...latencies].sort((a, b) => a - b);
    const pct = (p: number): number =>
      sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
    report('heal: real clock delete -> re-create', {
      n: sorted.length,
      p50: `${pct(50).toFixed(0)}ms`,
      p99: `${pct(99).toFixed(0)}ms`,
      max: `${(sorted.at(-1) ?? NaN).toFixed(0)}ms`,
      buildTime: `${system.sim.buildTimeOf(`${AG_NAMESPACE}/${names[0] ?? ''}`)}ms`,
    });
    expect(pct(99)).toBeLessThanOrEqual(5_000);
    for (const name of names) expect(bumpsOf(system, name)).toBe(1);
  });
});
