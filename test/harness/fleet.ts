// A fleet of PackageSource/AG pairs rebuilding concurrently on the end-to-end system, for early
// detection at scale (test/e2e/early-detection.test.ts and the P8 benchmark). Honest AGs rebuild
// with build times spread over [0.2 s, 110 s]; some AGs lose their first build's Ready write, others
// the Ready write of their first rebuild. Measures; asserts nothing (callers do).

import { createOwnedPair } from '../support/apiserver.js';
import type { System } from './system.js';

export const MIN_BUILD_MS = 200;
export const MAX_BUILD_MS = 110_000;
/**
 * Build times of the AGs that stall. After the force, source-watcher rebuilds them with the same
 * build time, and a forced rebuild still in progress when the 30 s backoff ends is forced again,
 * as in the reference driver (docs/adr/0014-early-detection.md): kept under the backoff here so
 * every extra force counts as a wrong one.
 */
export const MAX_STALL_BUILD_MS = 25_000;

export interface FleetOptions {
  /** AGs that only ever build honestly. */
  honest: number;
  /** AGs whose first build loses its Ready write. */
  firstBuildStalls: number;
  /** AGs whose first rebuild (round 1) loses its Ready write; honest in later rounds. */
  rebuildStalls: number;
  /** Rebuild rounds: every rebuilding AG's source moves at once, once per round. */
  rounds: number;
  /** Distinct build times spread over [MIN_BUILD_MS, MAX_BUILD_MS] (fewer = fewer clock stops). */
  buildTimeSteps: number;
  /** Namespace of the AGs (default cozy-system). */
  namespace?: string;
  /** Name prefix (unique per run). */
  prefix: string;
  /** Progress lines. */
  log?: (line: string) => void;
  /** Longest honest build (default MAX_BUILD_MS, under the 2m30s grace). */
  maxHonestBuildMs?: number;
  /**
   * Longest build of a stall AG (default MAX_STALL_BUILD_MS, under the 30 s backoff). Longer ones
   * show the known re-force of a forced rebuild still running when its backoff ends (ADR 14).
   */
  maxStallBuildMs?: number;
  /** Distinct build times of each stall role (default buildTimeSteps). */
  stallBuildTimeSteps?: number;
  /** Virtual time allowed for each phase (default 6 minutes; a few workers need more). */
  maxVirtualMsPerPhase?: number;
}

export interface FleetMember {
  readonly name: string;
  readonly key: string;
  readonly role: 'honest' | 'first-build-stall' | 'rebuild-stall';
  readonly buildTimeMs: number;
}

export interface FleetResult {
  readonly members: readonly FleetMember[];
  /** Honest builds that rebuilt an AG that already had outputs (first builds not counted). */
  readonly honestRebuilds: number;
  /** Their build times, min and max. */
  readonly honestBuildTimeRangeMs: readonly [number, number];
  /** Forces of honest AGs, and of stall AGs in their honest rounds. */
  readonly wrongForces: number;
  /** Which AGs got them (role, build time, attempts), for the failure message. */
  readonly wrongForced: readonly string[];
  /** lost write -> first force, per stalled AG. */
  readonly stallToForceMs: readonly number[];
  /** Honest AGs whose PackageSource ever showed AwaitingSourceWatcherRecovery. */
  readonly awaitingOnHonest: number;
  /** detect's history reads (LIST at resourceVersion - 1). */
  readonly historyReads: number;
  /** Of those, the reads about honest AGs (their rebuilds' in-progress versions). */
  readonly honestHistoryReads: number;
  /** ApiServerSource events sent. */
  readonly agEvents: number;
  /** Builds of every kind, from the simulator. */
  readonly builds: number;
  /** Stalls: lost writes recorded. */
  readonly stalls: number;
  readonly wallMs: number;
  /** Forces of honest AGs, with their build times (part of wrongForces). */
  readonly honestForces: readonly { readonly buildTimeMs: number; readonly forces: number }[];
  /** Forces after the first of stall AGs, with their build times (part of wrongForces). */
  readonly stallReForces: readonly { readonly buildTimeMs: number; readonly forces: number }[];
}

export function spreadBuildTime(i: number, steps: number, max = MAX_BUILD_MS): number {
  const step = i % Math.max(1, steps);
  return Math.round(MIN_BUILD_MS + ((max - MIN_BUILD_MS) * step) / Math.max(1, steps - 1));
}

function builtCount(system: System, key: string): number {
  return system.sim.reconcilesOf(key).filter((r) => r.outcome === 'Built').length;
}

export async function runFleet(system: System, o: FleetOptions): Promise<FleetResult> {
  const started = performance.now();
  const log = o.log ?? (() => undefined);
  const namespace = o.namespace ?? 'cozy-system';
  const members: FleetMember[] = [];
  const add = (role: FleetMember['role'], count: number): void => {
    for (let i = 0; i < count; i++) {
      const name = `${o.prefix}-${role
        .split('-')
        .map((w) => w[0])
        .join('')}-${String(i).padStart(3, '0')}`;
      members.push({
        name,
        key: `${namespace}/${name}`,
        role,
        buildTimeMs: spreadBuildTime(
          i,
          role === 'honest' ? o.buildTimeSteps : (o.stallBuildTimeSteps ?? o.buildTimeSteps),
          role === 'honest'
            ? (o.maxHonestBuildMs ?? MAX_BUILD_MS)
            : (o.maxStallBuildMs ?? MAX_STALL_BUILD_MS),
        ),
      });
    }
  };
  add('honest', o.honest);
  add('rebuild-stall', o.rebuildStalls);
  add('first-build-stall', o.firstBuildStalls);

  // Knobs first: the simulator must know them before it first sees an AG.
  for (const m of members) {
    system.sim.setBuildTimeOf(m.key, m.buildTimeMs);
    if (m.role === 'first-build-stall') system.sim.loseConditionsWrite(m.key, { times: 1 });
  }
  for (const m of members) {
    await createOwnedPair({ name: m.name, namespace }, system.kubeConfig);
  }
  const rebuilders = members.filter((m) => m.role !== 'first-build-stall');
  const firstStalls = members.filter((m) => m.role === 'first-build-stall');
  const rebuildStalls = members.filter((m) => m.role === 'rebuild-stall');
  await system.runUntil(
    () =>
      rebuilders.every((m) => builtCount(system, m.key) >= 1) &&
      firstStalls.every((m) => system.progress.of(m.key).recoveries.length >= 1),
    {
      maxVirtualMs: o.maxVirtualMsPerPhase ?? 6 * 60_000,
      stepMs: 15_000,
      what: 'first builds and first-build recoveries',
    },
  );
  log(`  first builds done (${((performance.now() - started) / 1000).toFixed(0)} s wall)`);

  for (let round = 1; round <= o.rounds; round++) {
    if (round === 1) {
      for (const m of rebuildStalls) system.sim.loseConditionsWrite(m.key, { times: 1 });
    }
    for (const m of rebuilders) system.sim.setSourceRevision(m.key, `v${round + 1}`);
    await system.runUntil(
      () =>
        rebuilders.every((m) => builtCount(system, m.key) >= round + 1) &&
        rebuildStalls.every((m) => system.progress.of(m.key).recoveries.length >= 1),
      {
        maxVirtualMs: o.maxVirtualMsPerPhase ?? 6 * 60_000,
        stepMs: 15_000,
        what: `rebuild round ${round}`,
      },
    );
    log(`  round ${round} done (${((performance.now() - started) / 1000).toFixed(0)} s wall)`);
  }
  // Past every time-rule deadline an honest build could have armed.
  await system.advance(3 * 60_000);

  const stalled = [...firstStalls, ...rebuildStalls];
  const stallToForceMs = stalled.map((m) => {
    const p = system.progress.of(m.key);
    return (p.forces[0]?.claimedAt ?? NaN) - (p.stalls[0] ?? NaN);
  });
  const honest = members.filter((m) => m.role === 'honest');
  const honestRebuilds =
    honest.reduce((n, m) => n + builtCount(system, m.key) - 1, 0) +
    rebuildStalls.reduce((n, m) => n + Math.max(0, builtCount(system, m.key) - 3), 0);
  const honestTimes = honest.map((m) => m.buildTimeMs);
  const wrongForces =
    honest.reduce((n, m) => n + system.progress.of(m.key).forces.length, 0) +
    stalled.reduce((n, m) => n + Math.max(0, system.progress.of(m.key).forces.length - 1), 0);
  const wrongForced = members
    .filter((m) => system.progress.of(m.key).forces.length > (m.role === 'honest' ? 0 : 1))
    .map((m) => {
      const p = system.progress.of(m.key);
      return `${m.key} ${m.role} build=${m.buildTimeMs}ms forces=${p.forces.map((f) => f.claimedAt - started).join(',')} stalls=${p.stalls.length}`;
    });
  const historyCalls = system.proxy
    .callsMatching({ clientTag: 'detect', verb: 'list', resource: 'artifactgenerators' })
    .filter((c) => c.path.includes('resourceVersionMatch=Exact'));
  const honestNames = new Set(honest.map((m) => encodeURIComponent(`metadata.name=${m.name}`)));
  const honestHistoryReads = historyCalls.filter((c) => {
    const selector = /fieldSelector=([^&]*)/.exec(c.path)?.[1];
    return selector !== undefined && honestNames.has(selector);
  }).length;
  return {
    members,
    honestRebuilds,
    honestBuildTimeRangeMs: [Math.min(...honestTimes), Math.max(...honestTimes)],
    wrongForces,
    wrongForced,
    stallToForceMs,
    awaitingOnHonest: honest.filter((m) =>
      system.progress
        .packageSourceVersions(m.name)
        .some((v) => v.reason === 'AwaitingSourceWatcherRecovery'),
    ).length,
    historyReads: historyCalls.length,
    honestHistoryReads,
    agEvents: system.knative.apiServerSource.sent.length,
    builds: members.reduce((n, m) => n + builtCount(system, m.key), 0),
    stalls: stalled.reduce((n, m) => n + system.progress.of(m.key).stalls.length, 0),
    wallMs: performance.now() - started,
    honestForces: honest
      .map((m) => ({ buildTimeMs: m.buildTimeMs, forces: system.progress.of(m.key).forces.length }))
      .filter((x) => x.forces > 0),
    stallReForces: stalled
      .map((m) => ({
        buildTimeMs: m.buildTimeMs,
        forces: Math.max(0, system.progress.of(m.key).forces.length - 1),
      }))
      .filter((x) => x.forces > 0),
  };
}
