// P9: recovery under the first-install storm (issues 19 and 33), on the end-to-end harness (the
// source-watcher simulator, the Knative emulation redelivering on Knative's schedule, the real
// functions, the real kube-apiserver) on the virtual clock. 150 PackageSource/AG pairs are created
// at once, 40 of them lose their Ready write once, twice or always (two of the always-losing ones
// have a rebuild fail honestly after their third force), while for 8 minutes the KubeProxy answers
// the functions' requests 20 % 500 etcd timeout, 10 % 429 with Retry-After and delays 20 % by
// 2-8 s (held on the virtual clock), source-watcher's mildly, and the event path's (the
// ApiServerSources' and the PingSource adapter's lists and watch connects: held, closed
// mid-stream, 410 on a resume; test/support/storm.ts, ADR 40 and ADR 60). The same fleet without
// faults, in the same run, is the baseline of the functions' request rate. Simulator concurrency
// 4 (the recorded source-watcher) and 20 (Cozystack's setting).
//
// P9_SIZE=standard runs the e2e scenario's size (30 pairs, 8 losing); P9_CONCURRENCY=4 or 20
// runs one variant; P9_PROFILES=both also runs ADR 40's storm (the event path untouched) on the
// same fleet, its rows beside the new ones.

import {
  medianOrNull,
  percentileOrNull,
  runStormFleet,
  type StormFleetOptions,
  type StormRunResult,
} from '../harness/storm-fleet.js';
import {
  eventLedger,
  eventPathStats,
  followUpLedger,
  LEDGER_LOG_MESSAGES,
  type EventLedger,
  type EventPathStats,
  type FollowUpLedger,
} from '../harness/storm-ledger.js';
import {
  defaultStormProfiles,
  functionsOnlyStormProfiles,
  STORM_DURATION_MS,
  STORM_VIRTUAL_CLOCK_DELIVERY_TIMEOUT_MS,
  STORM_VIRTUAL_CLOCK_ENV,
  type StormClientProfile,
} from '../support/storm.js';
import { slowestFirstForces, type FirstForceTimeline } from '../harness/storm-timeline.js';
import { withBenchSystem } from './bench-system.js';
import { sizeNamed, smokeMode } from './smoke.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';
import { ratioRow, REPORT_ONLY, rowsPerVariant, valueRowsOf } from './types.js';

export const P9_FLEETS = {
  full: { pairs: 150, once: 16, twice: 12, always: 12, alwaysWithHonestFailure: 2 },
  standard: { pairs: 30, once: 3, twice: 2, always: 3, alwaysWithHonestFailure: 1 },
  /** The bench smoke's (CI): it only proves the row still runs. */
  smoke: { pairs: 6, once: 1, twice: 1, always: 1, alwaysWithHonestFailure: 0 },
} as const satisfies Record<string, Omit<StormFleetOptions, 'prefix'>>;
export type P9Size = keyof typeof P9_FLEETS;

export function p9Size(value: string | undefined): P9Size {
  return sizeNamed('P9_SIZE', value, ['full', 'standard', 'smoke'], 'full');
}

const CONCURRENCIES = [4, 20] as const;

/** The storms P9 can run: the one as it happens (ADR 60), and ADR 40's for comparison. */
const PROFILES = {
  'event-path': { label: 'event-path storm', profiles: defaultStormProfiles },
  'functions-only': {
    label: 'ADR 40 storm (event path untouched)',
    profiles: functionsOnlyStormProfiles,
  },
} as const satisfies Record<
  string,
  { label: string; profiles: () => Record<string, StormClientProfile> }
>;
type ProfileName = keyof typeof PROFILES;

export function p9Profiles(value: string | undefined): ProfileName[] {
  const v = value ?? 'event-path';
  if (v === 'both') return ['event-path', 'functions-only'];
  if (v === 'event-path' || v === 'functions-only') return [v];
  throw new Error(`P9_PROFILES must be event-path, functions-only or both, got ${v}`);
}
const SEED = 19;
const BUDGET_S = 15 * 60;
const FIRST_FORCE_MEDIAN_S = 10;
const FIRST_FORCE_P99_S = 30;
const RUN_MS = 24 * 60_000;
const NAMESPACE = 'cozy-system';
const WHERE = 'sim, virtual clock';
/** The slowest first forces whose timelines the detail keeps. */
const SLOWEST_SHOWN = 3;

export const p9: BenchModule = {
  id: 'P9',
  title: 'recovery under the first-install storm (500/429/delays for 8 minutes)',
  async run(ctx) {
    const size = smokeMode() ? 'smoke' : p9Size(process.env['P9_SIZE']);
    const only = process.env['P9_CONCURRENCY'] ?? (smokeMode() ? '4' : undefined);
    const profiles = p9Profiles(process.env['P9_PROFILES']);
    ctx.log(`  fleet: ${size} (P9_SIZE), storms: ${profiles.join(', ')} (P9_PROFILES)`);
    return rowsPerVariant(
      'P9',
      CONCURRENCIES.filter((c) => only === undefined || String(c) === only),
      (concurrency) => `concurrency ${concurrency}: the storm run`,
      (concurrency) => runVariant(ctx, P9_FLEETS[size], concurrency, profiles),
    );
  },
};

interface P9Run extends StormRunResult {
  stormCounts?: Record<string, number>;
  events: EventLedger;
  followUps: FollowUpLedger;
  eventPath: EventPathStats;
  slowestFirstForces: FirstForceTimeline[];
}

async function runOnce(
  ctx: BenchContext,
  fleet: Omit<StormFleetOptions, 'prefix'>,
  concurrency: number,
  storm: ProfileName | undefined,
): Promise<P9Run> {
  return withBenchSystem(
    ctx,
    NAMESPACE,
    9,
    {
      broker: { retryOn: 'clock', defaultTimeoutMs: STORM_VIRTUAL_CLOCK_DELIVERY_TIMEOUT_MS },
      env: STORM_VIRTUAL_CLOCK_ENV,
      settleTimeoutMs: 600_000,
      sourceWatcher: { concurrency },
      // The ledgers' messages only (info: "follow-up armed", "sweep done").
      logLevel: 'info',
      logKeep: LEDGER_LOG_MESSAGES,
    },
    async (system) => {
      const profile =
        storm === undefined
          ? undefined
          : system.startStorm({ seed: SEED, profiles: PROFILES[storm].profiles() });
      const prefix = `p9${storm === undefined ? 'b' : storm === 'event-path' ? 'e' : 's'}${concurrency}`;
      const r = await runStormFleet(
        system,
        { ...fleet, prefix },
        { windowMs: STORM_DURATION_MS, runMs: RUN_MS },
      );
      const events = await eventLedger(system, r.fleet, NAMESPACE);
      ctx.log(
        `  concurrency ${concurrency}, ${storm ?? 'no faults'}: ${Math.round(r.wallMs / 1000)} s wall, ` +
          `${r.figures.pending.length} pending, ${r.figures.functionRequests} function requests in the window`,
      );
      return {
        ...r,
        ...(profile === undefined ? {} : { stormCounts: { ...profile.counts } }),
        events,
        followUps: followUpLedger(system),
        eventPath: eventPathStats(system),
        slowestFirstForces: slowestFirstForces(system, r.figures.results, SLOWEST_SHOWN),
      };
    },
  );
}

async function runVariant(
  ctx: BenchContext,
  fleet: Omit<StormFleetOptions, 'prefix'>,
  concurrency: number,
  profiles: readonly ProfileName[],
): Promise<BenchRow[]> {
  const calm = await runOnce(ctx, fleet, concurrency, undefined);
  const rows: BenchRow[] = [];
  for (const name of profiles) {
    const storm = await runOnce(ctx, fleet, concurrency, name);
    rows.push(...stormRows(fleet, concurrency, name, calm, storm));
  }
  return rows;
}

const dropped = (e: EventLedger): number => Object.values(e.owedDropped).reduce((a, b) => a + b, 0);

function stormRows(
  fleet: Omit<StormFleetOptions, 'prefix'>,
  concurrency: number,
  name: ProfileName,
  calm: P9Run,
  storm: P9Run,
): BenchRow[] {
  const f = storm.figures;
  const losing = fleet.once + fleet.twice + fleet.always;
  const label = `${WHERE}, ${fleet.pairs} pairs, ${losing} losing, concurrency ${concurrency}, ${PROFILES[name].label}`;
  const outcomeS = f.stallToOutcomeMs.map((ms) => ms / 1000);
  const forceS = f.stallToFirstForceMs.map((ms) => ms / 1000);
  const maxOutcome = outcomeS.length === 0 ? NaN : Math.max(...outcomeS);
  const late = f.results
    .filter((r) => r.stallToOutcomeMs !== null && r.stallToOutcomeMs > BUDGET_S * 1000)
    .map(
      (r) => `${r.member.key} ${r.member.role} ${Math.round((r.stallToOutcomeMs ?? 0) / 1000)} s`,
    );
  const detail = {
    where: WHERE,
    concurrency,
    profile: name,
    fleet,
    stormFaults: storm.stormCounts,
    eventPath: storm.eventPath,
    events: storm.events,
    eventsNoFault: calm.events,
    followUps: storm.followUps,
    followUpsNoFault: calm.followUps,
    pending: f.pending,
    late,
    stalls: f.stalls,
    deadLetteredByType: f.deadLetteredByType,
    deadLettered: f.deadLettered,
    tooMany: f.tooMany,
    tooManyRepeated: f.tooManyRepeated,
    repeatDelayMedianWallMs: f.repeatDelayMedianWallMs,
    functionRequestsStorm: f.functionRequests,
    functionRequestsNoFault: calm.figures.functionRequests,
    noFaultPending: calm.figures.pending,
    perAg: f.results
      .filter((r) => r.member.role !== 'honest')
      .map((r) => ({
        ag: r.member.name,
        role: r.member.role,
        outcome: r.outcome,
        stallToOutcomeS: r.stallToOutcomeMs === null ? null : r.stallToOutcomeMs / 1000,
        stallToFirstForceS: r.stallToFirstForceMs === null ? null : r.stallToFirstForceMs / 1000,
        forces: r.forces,
        stalls: r.stalls,
        failures: r.failures,
      })),
    slowestFirstForces: storm.slowestFirstForces,
    honestForced: f.honestForced,
    stormStalls: f.stormStalls,
    functionRequestsByCall: f.functionRequestsByCall,
    functionRequestsByCallNoFault: calm.figures.functionRequestsByCall,
    functionAnswersByCall: f.functionAnswersByCall,
    functionAnswersByCallNoFault: calm.figures.functionAnswersByCall,
    wallSeconds: Math.round((calm.wallMs + storm.wallMs) / 1000),
  };
  const num = (v: number | null): number => v ?? NaN;
  const c = (k: string): number => storm.stormCounts?.[k] ?? 0;
  const row = valueRowsOf('P9', detail);
  return [
    ...([50, 99] as const).map((p) =>
      row({
        metric: `${label}: first stall of the cycle -> outcome, p${p}`,
        value: num(percentileOrNull(outcomeS, p)),
        unit: 's',
        ...REPORT_ONLY,
      }),
    ),
    row({
      metric: `${label}: first stall of the cycle -> outcome, max (${f.pending.length} without one)`,
      value: maxOutcome,
      unit: 's',
      target: `every lost write, <= ${BUDGET_S} s`,
      pass: f.pending.length === 0 && maxOutcome <= BUDGET_S,
    }),
    row({
      metric: `${label}: stall -> first force, median`,
      value: num(medianOrNull(forceS)),
      unit: 's',
      target: `<= ${FIRST_FORCE_MEDIAN_S} s`,
      pass: forceS.length > 0 && num(medianOrNull(forceS)) <= FIRST_FORCE_MEDIAN_S,
    }),
    row({
      metric: `${label}: stall -> first force, p99`,
      value: num(percentileOrNull(forceS, 99)),
      unit: 's',
      target: `<= ${FIRST_FORCE_P99_S} s`,
      pass: forceS.length > 0 && num(percentileOrNull(forceS, 99)) <= FIRST_FORCE_P99_S,
    }),
    row({
      metric: `${label}: dead-lettered action events (force, clear-tracking, stalled)`,
      value: f.deadLetteredActions,
      unit: 'events',
      target: '0',
      pass: f.deadLetteredActions === 0,
    }),
    row({
      metric: `${label}: forces of honest builds`,
      value: f.honestForces,
      unit: 'forces',
      target: '0',
      pass: f.honestForces === 0,
    }),
    ratioRow({
      id: 'P9',
      metric: `${label}: functions' API requests per second in the 8-minute window, storm vs no faults`,
      value: f.functionRequestsPerSecond,
      baseline: calm.figures.functionRequestsPerSecond,
      unit: 'req/s',
      target: 'ratio <= 2 (no retry storm)',
      maxRatio: 2,
      detail,
    }),
    row({
      metric: `${label}: 429 answers repeated (${f.tooManyRepeated} of ${f.tooMany}), median delay to the repeat`,
      value: num(f.repeatDelayMedianMs) / 1000,
      unit: 's',
      target: `report (Retry-After 1 s)`,
      pass: null,
    }),
    row({
      metric: `${label}: recovery steps without their Kubernetes Event at the end (of ${storm.events.steps}; ${storm.events.notWrittenWarnings} "could not write Kubernetes Event", ${dropped(storm.events)} owed dropped; ${storm.events.unfinishedClaims} claims superseded before their rebuild, no step)`,
      value: storm.events.stepsWithoutEvent,
      unit: 'steps',
      target: '0',
      pass: storm.events.stepsWithoutEvent === 0,
    }),
    row({
      metric: `${label}: "follow-up not armed" not covered by a later arm or a sweep within 6 min (of ${storm.followUps.notArmed})`,
      value: storm.followUps.uncovered,
      unit: 'warnings',
      target: '0',
      pass: storm.followUps.uncovered === 0,
    }),
    row({
      metric: `${label}: event path: adapter watch connects ${c('watches')}, held ${c('watchHeld')}, closed mid-stream ${c('watchClosed')}, 410 ${c('watchGone')}; AG source backoffs ${storm.eventPath.agSourceBackoffs}, re-lists`,
      value: storm.eventPath.agSourceRelists,
      unit: 're-lists',
      ...REPORT_ONLY,
    }),
  ];
}
