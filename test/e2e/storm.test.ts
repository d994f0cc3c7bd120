// End-to-end: recovery under the first-install storm (issues 19 and 33), at a size CI can afford.
// A fleet of PackageSource/AG pairs is created at once while, for 8 virtual minutes, the KubeProxy
// answers the functions' requests 20 % 500 `etcdserver: request timed out`, 10 % 429 with
// Retry-After and delays 20 % by 2-8 s (held on the virtual clock), source-watcher's mildly
// (docs/adr/0040), and the event path's too: the ApiServerSources' and the PingSource adapter's
// lists like the functions' requests, 20 % of their watch connects held 2-8 s, open watches closed
// mid-stream and a quarter of the resumes answered 410 Gone (docs/adr/0060).
// Some AGs lose their Ready write once, twice or always; one always-losing AG has a rebuild fail
// honestly in the middle of its cycle, as the storm made the real source-watcher's fail. The
// Broker redelivers on Knative's schedule on the virtual clock (docs/adr/0041). The same fleet
// without faults is the baseline of the request rate.
//
// Asserted on the state of the world: every lost write reaches its outcome (recovered, or
// SourceWatcherStalled for the always-losing ones) within 15 minutes of the first stall of its
// cycle, and no honest build is forced (an AG that the fleet did not plan to lose but whose verdict
// the storm itself lost counts as a stall, not as an honest build). Dead-lettered action events,
// first-force latency, the request-rate ratio, the steps without their Kubernetes Event and the
// uncovered "follow-up not armed" are reported here and are P9's rows (issue 33 keeps them
// open). The full size (150 pairs, 40 losing, source-watcher concurrency 4 and 20) is
// `npm run bench -- --only P9`.

import { describe, expect, it } from 'vitest';
import {
  MINUTE,
  report,
  seconds,
  startSystem,
  uniqueStormPrefix,
  wallClock,
  type System,
} from './scenario-kit.js';
import {
  medianOrNull,
  percentileOrNull,
  runStormFleet,
  type StormFleetOptions,
} from '../harness/storm-fleet.js';
import {
  eventLedger,
  eventPathStats,
  followUpLedger,
  LEDGER_LOG_MESSAGES,
} from '../harness/storm-ledger.js';
import {
  STORM_DURATION_MS,
  STORM_VIRTUAL_CLOCK_DELIVERY_TIMEOUT_MS,
  STORM_VIRTUAL_CLOCK_ENV,
} from '../support/storm.js';

const FLEET: Omit<StormFleetOptions, 'prefix'> = {
  pairs: 30,
  once: 3,
  twice: 2,
  always: 3,
  alwaysWithHonestFailure: 1,
  honestFailureAfterForce: 3,
};
const CONCURRENCY = 4;
const SEED = 19;
/** The HelmRelease's budget, from the first stall of the cycle. */
const BUDGET_MS = 15 * MINUTE;
/** Long enough past the budget to see a late outcome instead of a time-out. */
const RUN_MS = 24 * MINUTE;

/** The system both runs use: the Broker retrying on the virtual clock. */
const startFleetSystem = () =>
  startSystem({
    sourceWatcher: { concurrency: CONCURRENCY },
    broker: { retryOn: 'clock', defaultTimeoutMs: STORM_VIRTUAL_CLOCK_DELIVERY_TIMEOUT_MS },
    env: STORM_VIRTUAL_CLOCK_ENV,
    logLevel: 'info',
    logKeep: LEDGER_LOG_MESSAGES,
  });
/** The fleet (its names prefixed `prefix`) created on `system` and run through the storm window. */
const runFleet = (system: System, prefix: string) =>
  runStormFleet(
    system,
    { ...FLEET, prefix: uniqueStormPrefix(prefix) },
    { windowMs: STORM_DURATION_MS, runMs: RUN_MS },
  );

describe('e2e: recovery under the first-install storm', () => {
  it(`${FLEET.pairs} pairs at once, ${FLEET.once + FLEET.twice + FLEET.always} losing their Ready write, 8-minute storm`, async () => {
    const wall = wallClock();
    const calm = await startFleetSystem();
    const baseline = await runFleet(calm, 'sb');
    await calm.stop();
    const calmWall = wall();

    const system = await startFleetSystem();
    const storm = system.startStorm({ seed: SEED });
    const { figures: f, fleet } = await runFleet(system, 'ss');
    const events = await eventLedger(system, fleet, 'cozy-system');
    const followUps = followUpLedger(system);
    const eventPath = eventPathStats(system);
    const c = storm.counts;

    const ratio = f.functionRequestsPerSecond / baseline.figures.functionRequestsPerSecond;
    report('storm', {
      pairs: FLEET.pairs,
      losing: FLEET.once + FLEET.twice + FLEET.always,
      stormFaults: `${c.error500}x500/${c.tooMany}x429/${c.delayed}xdelay of ${c.seen}`,
      watchFaults: `${c.watchHeld} held/${c.watchClosed} closed/${c.watchGone}x410 of ${c.watches}`,
      eventPath: JSON.stringify(eventPath),
      stepsWithoutEvent: `${events.stepsWithoutEvent} of ${events.steps} [${events.missing.join(', ')}]`,
      eventNotWritten: events.notWrittenWarnings,
      followUpsUncovered: `${followUps.uncovered} of ${followUps.notArmed} [${followUps.uncoveredAt.join(', ')}]`,
      stallToOutcomeMax: seconds(Math.max(0, ...f.stallToOutcomeMs)),
      firstForceMedian: seconds(medianOrNull(f.stallToFirstForceMs) ?? NaN),
      firstForceP99: seconds(percentileOrNull(f.stallToFirstForceMs, 99) ?? NaN),
      pending: f.pending.length,
      honestForces: `${f.honestForces} [${f.honestForced.join(', ')}]`,
      stormStalls: `[${f.stormStalls.join(', ')}]`,
      callsStorm: JSON.stringify(f.functionRequestsByCall),
      callsCalm: JSON.stringify(baseline.figures.functionRequestsByCall),
      deadLetteredActions: f.deadLetteredActions,
      deadLettered: JSON.stringify(f.deadLetteredByType),
      reqPerSecStorm: f.functionRequestsPerSecond.toFixed(2),
      reqPerSecCalm: baseline.figures.functionRequestsPerSecond.toFixed(2),
      ratio: ratio.toFixed(2),
      repeated429: `${f.tooManyRepeated}/${f.tooMany}`,
      repeatMedian: seconds(f.repeatDelayMedianMs ?? NaN),
      wallCalm: calmWall,
      wall: wall(),
    });
    if (process.env['STORM_TIMELINE']) {
      printDeliveries('calm', calm);
      printDeliveries('storm', system);
    }
    for (const r of f.results.filter((x) => x.member.role !== 'honest')) {
      if (process.env['STORM_TIMELINE']) {
        const p = system.progress.of(r.member.key);
        const t0 = p.stalls[0] ?? 0;
        const rel = (t: number | null) => (t === null ? '-' : ((t - t0) / 1000).toFixed(1));
        console.log(
          `[e2e] timeline ${r.member.key} stalls=${p.stalls.map(rel).join(',')} forces=${p.forces.map((x) => `${x.attempt}@${rel(x.claimedAt)}/${rel(x.bumpedAt)}`).join(',')} bumps=${p.bumps.map(rel).join(',')} failures=${p.failures.map((x) => rel(x.at) + x.reason).join(',')} giveUps=${p.giveUps.map(rel).join(',')} stalled=${rel(p.stalledAt)}`,
        );
      }
      console.log(
        `[e2e] storm ${r.member.key} ${r.member.role}: ${r.outcome} after ${r.stallToOutcomeMs === null ? '-' : seconds(r.stallToOutcomeMs)}, ${r.forces} forces, ${r.stalls} stalls, ${r.failures} honest failures`,
      );
    }

    // The baseline itself must be sound, or the ratio means nothing.
    expect(baseline.figures.pending).toEqual([]);
    expect(baseline.figures.functionRequests).toBeGreaterThan(0);

    expect.soft(f.pending, 'lost writes without an outcome').toEqual([]);
    const late = f.results
      .filter((r) => r.stallToOutcomeMs !== null && r.stallToOutcomeMs > BUDGET_MS)
      .map((r) => `${r.member.key} (${r.member.role}) ${seconds(r.stallToOutcomeMs ?? 0)}`);
    expect.soft(late, 'outcomes later than 15 minutes after the first stall').toEqual([]);
    expect.soft(f.honestForces, 'forces of honest builds').toBe(0);
    // Issue 19's other targets are bench rows (P9): no dead-lettered action event, first force
    // median <= 10 s and p99 <= 30 s, the request rate at most 2x the calm run's. With ADR 45 and 47
    // the runs gave 0 dead-lettered actions, medians 3.0-8.5 s, p99 10-31 s and ratios 1.78-2.08
    // (docs/benchmarks.md): at 8 losing AGs a median or a ratio moves with a single delivery, so
    // they are printed here (and with STORM_TIMELINE=1 every losing AG's forces, bumps and verdict,
    // and every delivery by answer) and judged in P9 at full size, where asserting them would not
    // make CI red on noise.
    // The storm did happen: faults of each kind reached the functions, and the event path's
    // watches were held and closed mid-stream (its re-lists depend on which resumes met a 410).
    expect(c.error500).toBeGreaterThan(0);
    expect(c.tooMany).toBeGreaterThan(0);
    expect(c.delayed).toBeGreaterThan(0);
    expect(c.watchHeld, 'watch connects held').toBeGreaterThan(0);
    expect(c.watchClosed, 'watches closed mid-stream').toBeGreaterThan(0);
  }, 600_000);
});

/**
 * With STORM_TIMELINE=1: every delivery attempt by subscriber, event type and answer, and how many
 * copies of each action event (by AG, attempt and resourceVersion) reached the Broker.
 */
function printDeliveries(name: string, s: System): void {
  const byAnswer: Record<string, number> = {};
  for (const d of s.knative.broker.deliveries) {
    const key = `${d.subscriber} ${d.event.type.split('.').pop() ?? ''} ${d.status ?? 'error'}`;
    byAnswer[key] = (byAnswer[key] ?? 0) + 1;
  }
  console.log(`[e2e] deliveries ${name} ${JSON.stringify(byAnswer)}`);
  const actions: Record<string, number> = {};
  for (const i of s.knative.broker.ingested) {
    if (!i.event.type.startsWith('io.cozystack.sourcewatcher.')) continue;
    const d = i.event.data as { name?: string; attempts?: number; resourceVersion?: string };
    const key = `${i.event.type.split('.').pop() ?? ''} ${d.name ?? ''} a${d.attempts ?? ''} rv${d.resourceVersion ?? ''}`;
    actions[key] = (actions[key] ?? 0) + 1;
  }
  const copies: Record<string, number> = {};
  for (const n of Object.values(actions)) copies[n] = (copies[n] ?? 0) + 1;
  console.log(
    `[e2e] action events ${name}: ${Object.keys(actions).length} distinct, copies ${JSON.stringify(copies)}`,
  );
}
