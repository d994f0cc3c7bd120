// P9: recovery under the first-install storm (issue 19), on the end-to-end harness (the source-
// watcher simulator, the Knative emulation redelivering on Knative's schedule, the real functions,
// the real kube-apiserver) on the virtual clock. 150 PackageSource/AG pairs are created at once,
// 40 of them lose their Ready write once, twice or always (two of the always-losing ones have a
// rebuild fail honestly after their third force), while for 8 minutes the KubeProxy answers the
// functions' requests 20 % 500 etcd timeout, 10 % 429 with Retry-After and delays 20 % by 2-8 s
// (held on the virtual clock), and source-watcher's mildly (test/support/storm.ts, ADR 40). The
// same fleet without faults, in the same run, is the baseline of the functions' request rate.
// Simulator concurrency 4 (the recorded source-watcher) and 20 (Cozystack's setting).
//
// P9_SIZE=standard runs the e2e scenario's size (30 pairs, 8 losing); P9_CONCURRENCY=4 or 20
// runs one variant.

import {
  medianOrNull,
  percentileOrNull,
  runStormFleet,
  type StormFleetOptions,
  type StormRunResult,
} from '../harness/storm-fleet.js';
import {
  STORM_DURATION_MS,
  STORM_VIRTUAL_CLOCK_DELIVERY_TIMEOUT_MS,
  STORM_VIRTUAL_CLOCK_ENV,
} from '../support/storm.js';
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
const SEED = 19;
const BUDGET_S = 15 * 60;
const FIRST_FORCE_MEDIAN_S = 10;
const FIRST_FORCE_P99_S = 30;
const RUN_MS = 24 * 60_000;
const NAMESPACE = 'cozy-system';
const WHERE = 'sim, virtual clock';

export const p9: BenchModule = {
  id: 'P9',
  title: 'recovery under the first-install storm (500/429/delays for 8 minutes)',
  async run(ctx) {
    const size = smokeMode() ? 'smoke' : p9Size(process.env['P9_SIZE']);
    const only = process.env['P9_CONCURRENCY'] ?? (smokeMode() ? '4' : undefined);
    ctx.log(`  fleet: ${size} (P9_SIZE)`);
    return rowsPerVariant(
      'P9',
      CONCURRENCIES.filter((c) => only === undefined || String(c) === only),
      (concurrency) => `concurrency ${concurrency}: the storm run`,
      (concurrency) => runVariant(ctx, P9_FLEETS[size], concurrency),
    );
  },
};

async function runOnce(
  ctx: BenchContext,
  fleet: Omit<StormFleetOptions, 'prefix'>,
  concurrency: number,
  storm: boolean,
): Promise<StormRunResult & { stormCounts?: Record<string, number> }> {
  return withBenchSystem(
    ctx,
    NAMESPACE,
    9,
    {
      broker: { retryOn: 'clock', defaultTimeoutMs: STORM_VIRTUAL_CLOCK_DELIVERY_TIMEOUT_MS },
      env: STORM_VIRTUAL_CLOCK_ENV,
      settleTimeoutMs: 600_000,
      sourceWatcher: { concurrency },
    },
    async (system) => {
      const profile = storm ? system.startStorm({ seed: SEED }) : undefined;
      const prefix = `p9${storm ? 's' : 'b'}${concurrency}`;
      const r = await runStormFleet(
        system,
        { ...fleet, prefix },
        { windowMs: STORM_DURATION_MS, runMs: RUN_MS },
      );
      ctx.log(
        `  concurrency ${concurrency}, ${storm ? 'storm' : 'no faults'}: ${Math.round(r.wallMs / 1000)} s wall, ` +
          `${r.figures.pending.length} pending, ${r.figures.functionRequests} function requests in the window`,
      );
      return profile === undefined ? r : { ...r, stormCounts: { ...profile.counts } };
    },
  );
}

async function runVariant(
  ctx: BenchContext,
  fleet: Omit<StormFleetOptions, 'prefix'>,
  concurrency: number,
): Promise<BenchRow[]> {
  const calm = await runOnce(ctx, fleet, concurrency, false);
  const storm = await runOnce(ctx, fleet, concurrency, true);
  const f = storm.figures;
  const losing = fleet.once + fleet.twice + fleet.always;
  const label = `${WHERE}, ${fleet.pairs} pairs, ${losing} losing, concurrency ${concurrency}`;
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
    fleet,
    stormFaults: storm.stormCounts,
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
        forces: r.forces,
        stalls: r.stalls,
        failures: r.failures,
      })),
    honestForced: f.honestForced,
    stormStalls: f.stormStalls,
    functionRequestsByCall: f.functionRequestsByCall,
    functionRequestsByCallNoFault: calm.figures.functionRequestsByCall,
    functionAnswersByCall: f.functionAnswersByCall,
    functionAnswersByCallNoFault: calm.figures.functionAnswersByCall,
    wallSeconds: Math.round((calm.wallMs + storm.wallMs) / 1000),
  };
  const num = (v: number | null): number => v ?? NaN;
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
  ];
}
