// The first-install storm's fleet (issue 19): N PackageSource/AG pairs created at once, M of
// them losing their Ready write once, twice or always, some of the always-losing ones with an
// honest failure of a rebuild in the middle of their cycle (the storm's errors failing
// source-watcher's rebuild: defect 4). Runs the system until every lost write has an outcome,
// then reads the state of the world into figures. Asserts nothing (the e2e scenario and the P9
// benchmark do).

import { median, percentile } from '../bench/stats.js';
import { createOwnedPair } from '../support/apiserver.js';
import type { ProxyCall } from '../support/kube-proxy.js';
import { STORM_FUNCTION_TAGS } from '../support/storm.js';
import type { System } from './system.js';

export type StormRole = 'honest' | 'once' | 'twice' | 'always' | 'always-honest-failure';

export interface StormFleetOptions {
  /** Pairs in all. */
  pairs: number;
  /** Of those, how many lose their Ready write once, twice, always. */
  once: number;
  twice: number;
  always: number;
  /**
   * Of the always-losing ones, how many have their rebuild after this force fail honestly
   * (Ready=False/ReconciliationFailed). Default 0 / 3 (the run: after the third force).
   */
  alwaysWithHonestFailure?: number;
  honestFailureAfterForce?: number;
  /** Name prefix (unique per run). */
  prefix: string;
  namespace?: string;
  /** Pairs created concurrently (default 16): "at once" on the virtual clock, which stands still. */
  createConcurrency?: number;
}

export interface StormFleetMember {
  readonly name: string;
  readonly key: string;
  readonly role: StormRole;
}

export interface StormFleet {
  readonly members: readonly StormFleetMember[];
  /** Virtual epoch ms when the pairs were created (the first-install moment). */
  readonly createdAt: number;
}

const ROLE_LETTERS: Record<StormRole, string> = {
  honest: 'h',
  once: 'o',
  twice: 't',
  always: 'a',
  'always-honest-failure': 'f',
};

export function planStormFleet(o: StormFleetOptions): StormFleetMember[] {
  const losing = o.once + o.twice + o.always;
  const withFailure = o.alwaysWithHonestFailure ?? 0;
  for (const [what, n] of Object.entries({
    pairs: o.pairs,
    once: o.once,
    twice: o.twice,
    always: o.always,
    alwaysWithHonestFailure: withFailure,
  })) {
    if (!Number.isInteger(n) || n < 0)
      throw new RangeError(`storm fleet: ${what} must be an integer >= 0, got ${n}`);
  }
  if (losing > o.pairs)
    throw new RangeError(`storm fleet: ${losing} losing pairs but only ${o.pairs} pairs`);
  if (withFailure > o.always) {
    throw new RangeError(
      `storm fleet: alwaysWithHonestFailure (${withFailure}) exceeds always (${o.always})`,
    );
  }
  const namespace = o.namespace ?? 'cozy-system';
  const roles: StormRole[] = [
    ...Array<StormRole>(o.once).fill('once'),
    ...Array<StormRole>(o.twice).fill('twice'),
    ...Array<StormRole>(withFailure).fill('always-honest-failure'),
    ...Array<StormRole>(o.always - withFailure).fill('always'),
    ...Array<StormRole>(o.pairs - losing).fill('honest'),
  ];
  return roles.map((role, i) => {
    const name = `${o.prefix}-${ROLE_LETTERS[role]}${String(i).padStart(3, '0')}`;
    return { name, key: `${namespace}/${name}`, role };
  });
}

/** Sets the simulator's knobs, then creates every pair at once (the virtual clock stands still). */
export async function createStormFleet(system: System, o: StormFleetOptions): Promise<StormFleet> {
  const members = planStormFleet(o);
  const afterForce = o.honestFailureAfterForce ?? 3;
  for (const m of members) {
    switch (m.role) {
      case 'once':
        system.sim.loseConditionsWrite(m.key, { times: 1 });
        break;
      case 'twice':
        system.sim.loseConditionsWrite(m.key, { times: 2 });
        break;
      case 'always':
        system.sim.loseConditionsWrite(m.key);
        break;
      case 'always-honest-failure':
        system.sim.loseConditionsWrite(m.key);
        // Each force sets a new requestedAt: the rebuild for the k-th one follows force k.
        system.sim.failBuildHonestly(m.key, afterForce);
        break;
      case 'honest':
        break;
    }
  }
  const createdAt = system.clock.now();
  const namespace = o.namespace ?? 'cozy-system';
  const queue = [...members];
  const worker = async (): Promise<void> => {
    for (let m = queue.shift(); m !== undefined; m = queue.shift()) {
      await createOwnedPair({ name: m.name, namespace }, system.kubeConfig);
    }
  };
  await Promise.all(Array.from({ length: o.createConcurrency ?? 16 }, () => worker()));
  return { members, createdAt };
}

export type StormOutcome = 'recovered' | 'SourceWatcherStalled' | 'pending';

export interface StormMemberResult {
  readonly member: StormFleetMember;
  /** The first lost write (the first stall of its cycle), virtual epoch ms. */
  readonly firstStallAt: number | null;
  readonly outcome: StormOutcome;
  /** When the outcome was reached: the recovery after its last stall, or the verdict. */
  readonly outcomeAt: number | null;
  /** first stall -> outcome, virtual ms. */
  readonly stallToOutcomeMs: number | null;
  /** first stall -> first force, virtual ms. */
  readonly stallToFirstForceMs: number | null;
  readonly forces: number;
  readonly stalls: number;
  /** Honest failures (Ready=False with an upstream reason) seen on the AG. */
  readonly failures: number;
}

/** Whether every losing member has its outcome (the run's stop condition). */
export function everyLostWriteDone(system: System, fleet: StormFleet): boolean {
  return memberResults(system, fleet)
    .filter((r) => r.member.role !== 'honest')
    .every((r) => r.outcome !== 'pending');
}

const expectsVerdict = (role: StormRole): boolean =>
  role === 'always' || role === 'always-honest-failure';

export function memberResults(system: System, fleet: StormFleet): StormMemberResult[] {
  return fleet.members.map((member) => {
    const p = system.progress.of(member.key);
    const firstStallAt = p.stalls[0] ?? null;
    const lastStall = p.stalls[p.stalls.length - 1] ?? null;
    let outcome: StormOutcome = 'pending';
    let outcomeAt: number | null = null;
    if (expectsVerdict(member.role)) {
      if (p.stalledAt !== null) {
        outcome = 'SourceWatcherStalled';
        outcomeAt = p.stalledAt;
      }
    } else if (member.role !== 'honest') {
      const after = p.recoveries.find((t) => lastStall !== null && t >= lastStall);
      // Every planned loss taken (once: 1, twice: 2) before the recovery counts.
      const planned = member.role === 'once' ? 1 : 2;
      if (after !== undefined && p.stalls.length >= planned) {
        outcome = 'recovered';
        outcomeAt = after;
      }
    }
    const firstForce = p.forces[0]?.claimedAt ?? null;
    return {
      member,
      firstStallAt,
      outcome,
      outcomeAt,
      stallToOutcomeMs:
        firstStallAt !== null && outcomeAt !== null ? outcomeAt - firstStallAt : null,
      stallToFirstForceMs:
        firstStallAt !== null && firstForce !== null ? firstForce - firstStallAt : null,
      forces: p.forces.length,
      stalls: p.stalls.length,
      failures: p.failures.length,
    };
  });
}

export interface StormFigures {
  readonly results: readonly StormMemberResult[];
  /** Losing members, first stall -> outcome, virtual ms (pending ones excluded: see pending). */
  readonly stallToOutcomeMs: number[];
  readonly stallToFirstForceMs: number[];
  readonly pending: string[];
  /** Forces of AGs that never lost a write (honest builds forced). */
  readonly honestForces: number;
  /** Which honest AGs were forced, and how often. */
  readonly honestForced: string[];
  /** The functions' requests in the window by client, verb and resource. */
  readonly functionRequestsByCall: Record<string, number>;
  /** The same calls by the answer the caller got (`cut` when it got none). */
  readonly functionAnswersByCall: Record<string, number>;
  /** AGs the fleet did not plan to lose that lost their verdict to the storm, and their forces. */
  readonly stormStalls: string[];
  /** Dead-lettered action events (force, clear-tracking, stalled) and AG events for detect. */
  readonly deadLetteredActions: number;
  readonly deadLettered: number;
  readonly deadLetteredByType: Record<string, number>;
  /** The functions' API requests in [from, to) on the system's clock, and per second. */
  readonly functionRequests: number;
  readonly functionRequestsPerSecond: number;
  /** 429 answers to the functions, and those repeated (same client, method and path) later. */
  readonly tooMany: number;
  readonly tooManyRepeated: number;
  /** Median time to the repeat: on the system's clock, and on the wall clock. */
  readonly repeatDelayMedianMs: number | null;
  readonly repeatDelayMedianWallMs: number | null;
  /** Stalls recorded in all (lost writes). */
  readonly stalls: number;
}

/** Median of a sample, or null for an empty one. */
export function medianOrNull(values: readonly number[]): number | null {
  return values.length === 0 ? null : median(values);
}

/** Nearest-rank percentile of a sample, or null for an empty one. */
export function percentileOrNull(values: readonly number[], p: number): number | null {
  return values.length === 0 ? null : percentile(values, p);
}

const FUNCTION_TAGS: readonly string[] = STORM_FUNCTION_TAGS;

function repeats(calls: readonly ProxyCall[]): {
  clock: number[];
  wall: number[];
  answered: number;
} {
  const clock: number[] = [];
  const wall: number[] = [];
  let answered = 0;
  const byKey = new Map<string, ProxyCall[]>();
  for (const c of calls) {
    if (!FUNCTION_TAGS.includes(c.clientTag)) continue;
    const key = `${c.clientTag} ${c.method} ${c.path}`;
    const list = byKey.get(key) ?? [];
    list.push(c);
    byKey.set(key, list);
  }
  for (const list of byKey.values()) {
    for (let i = 0; i < list.length; i++) {
      const c = list[i];
      if (c?.status !== 429) continue;
      answered += 1;
      const next = list[i + 1];
      if (next === undefined) continue;
      clock.push(next.at - c.at);
      wall.push(next.wallAt - c.wallAt);
    }
  }
  return { clock, wall, answered };
}

export function stormFigures(
  system: System,
  fleet: StormFleet,
  window: { from: number; to: number },
): StormFigures {
  const results = memberResults(system, fleet);
  const losing = results.filter((r) => r.member.role !== 'honest');
  const deadLetteredByType: Record<string, number> = {};
  for (const d of system.knative.broker.deadLetters) {
    // A ping names its PingSource (the resync's 3 retries differ from the alarm's, ADR 49).
    const { type, source } = d.event;
    const key = type.endsWith('.ping') ? `${type} ${source.split('/').pop() ?? ''}` : type;
    deadLetteredByType[key] = (deadLetteredByType[key] ?? 0) + 1;
  }
  const actions = system.knative.broker.deadLetters.filter((d) =>
    d.event.type.startsWith('io.cozystack.sourcewatcher.'),
  ).length;
  const inWindow = system.proxy.calls.filter(
    (c) => FUNCTION_TAGS.includes(c.clientTag) && c.at >= window.from && c.at < window.to,
  );
  const r = repeats(system.proxy.calls);
  return {
    results,
    stallToOutcomeMs: losing.flatMap((x) =>
      x.stallToOutcomeMs === null ? [] : [x.stallToOutcomeMs],
    ),
    stallToFirstForceMs: losing.flatMap((x) =>
      x.stallToFirstForceMs === null ? [] : [x.stallToFirstForceMs],
    ),
    pending: losing
      .filter((x) => x.outcome === 'pending')
      .map((x) => `${x.member.key} (${x.member.role})`),
    // An AG that the fleet did not plan to lose can still lose its verdict to the storm (its
    // conditions request failed at the API server while the rest of status landed: #934 itself);
    // forcing that one is the recovery working. Honest builds are the AGs that never stalled.
    honestForces: results
      .filter((x) => x.member.role === 'honest' && x.stalls === 0)
      .reduce((n, x) => n + x.forces, 0),
    honestForced: results
      .filter((x) => x.member.role === 'honest' && x.stalls === 0 && x.forces > 0)
      .map((x) => `${x.member.key} ${x.forces}`),
    stormStalls: results
      .filter((x) => x.member.role === 'honest' && x.stalls > 0)
      .map((x) => `${x.member.key} ${x.stalls} stall(s), ${x.forces} force(s)`),
    deadLetteredActions: actions,
    deadLettered: system.knative.broker.deadLetters.length,
    deadLetteredByType,
    functionRequests: inWindow.length,
    functionRequestsByCall: countBy(inWindow, callKey),
    functionAnswersByCall: countBy(inWindow, (c) => `${callKey(c)} ${c.status ?? 'cut'}`),
    functionRequestsPerSecond: inWindow.length / Math.max(1e-9, (window.to - window.from) / 1000),
    tooMany: r.answered,
    tooManyRepeated: r.clock.length,
    repeatDelayMedianMs: medianOrNull(r.clock),
    repeatDelayMedianWallMs: medianOrNull(r.wall),
    stalls: results.reduce((n, x) => n + x.stalls, 0),
  };
}

/** A call as the figures name it: caller, verb and resource. */
function callKey(c: ProxyCall): string {
  return `${c.clientTag} ${c.verb} ${c.resource}${c.subresource ? '/' + c.subresource : ''}`;
}

export interface StormRunResult {
  readonly fleet: StormFleet;
  readonly figures: StormFigures;
  /** The storm's window (or, without a storm, the same span from the install). */
  readonly window: { from: number; to: number };
  /** Every lost write had its outcome before the run's time ran out. */
  readonly finished: boolean;
  readonly wallMs: number;
}

/**
 * Creates the fleet at the virtual now and runs until the window is over and every lost write has
 * its outcome, or `runMs` of virtual time have passed (then `finished` is false and the pending
 * AGs are in figures.pending).
 */
export async function runStormFleet(
  system: System,
  o: StormFleetOptions,
  run: { windowMs: number; runMs: number; stepMs?: number },
): Promise<StormRunResult> {
  const started = performance.now();
  const fleet = await createStormFleet(system, o);
  const window = { from: fleet.createdAt, to: fleet.createdAt + run.windowMs };
  let finished = true;
  try {
    await system.runUntil(
      () => system.clock.now() >= window.to && everyLostWriteDone(system, fleet),
      {
        maxVirtualMs: run.runMs,
        stepMs: run.stepMs ?? 15_000,
        what: 'every lost write has its outcome',
      },
    );
  } catch (e) {
    if (!(e instanceof Error) || !e.message.startsWith('runUntil:')) throw e;
    finished = false;
  }
  return {
    fleet,
    figures: stormFigures(system, fleet, window),
    window,
    finished,
    wallMs: performance.now() - started,
  };
}

function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items) out[key(item)] = (out[key(item)] ?? 0) + 1;
  return out;
}
