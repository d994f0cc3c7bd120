// P1 (stall -> first force) and P2 (stall -> SourceWatcherStalled), measured with the end-to-end
// harness (test/harness/system.ts): the real functions over HTTP, the Knative emulation routed by
// knative/ (PingSource jitter and pick-up lag included), the source-watcher simulator and the real
// test API server, all on one virtual clock. Times are virtual, read from the harness's progress
// log (its own watch of the world), never from the functions.
//
// P1 is the time from the lost write to the first force, with the defaults: the lost write of a
// build leaves the signal (outputs moved while Ready stayed Unknown), so no grace period is waited
// out (docs/adr/0014-early-detection.md). On the virtual clock that is a logic check only: time
// stands still while HTTP deliveries and API calls run, so only waited timers can show up. P1 on
// the real clock (issue 21) runs the same system on test/harness/wall-clock.ts: the real
// functions, the real API server, real HTTP between them, the simulator with the recorded build
// time (25 ms) and worker count (4), and reports wall-clock p50/p99 with the machine's load. P2
// is the verdict for AGs source-watcher never heals (virtual clock).

import { loadavg } from 'node:os';

import { ANNOTATION_ATTEMPTS } from '../../shared/core/decision/tracking.js';
import { parseRfc3339, type AgProgress, type System } from '../harness/system.js';
import { createOwner, pool, type RawKube } from '../support/raw-kube.js';
import { withBenchSystem } from './bench-system.js';
import { loadSummary, percentile } from './stats.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';
import { REPORT_ONLY, valueRow, valueRowsOf } from './types.js';
import { sized } from './smoke.js';

const p1Ags = (): number => sized(200, 20);
const p1RealAgs = (): number => sized(100, 10);
const p2Ags = (): number => sized(20, 3);
/** P1 on the real clock: 10 pairs a second (a first install creates them in bursts). */
export const P1_REAL_SPREAD = { batch: 10, gapMs: 1_000 };
/** The recorded real source-watcher: builds of 20-30 ms, --concurrent 4 (test/recorded/source-watcher-v2.1.0). */
export const RECORDED_BUILD_MS = 25;
export const RECORDED_WORKERS = 4;
/** P1's install: 10 pairs every 7.3 virtual seconds (about 2.5 minutes for 200). */
export const P1_SPREAD = { batch: 10, gapMs: 7_300 };
/** Issue 13: stall -> first force p99 within 3 s when the stall left the signal. */
export const P1_TARGET_S = 3;
export const P2_TARGET_S = 12.5 * 60;
export const P2_BUDGET_S = 15 * 60;
const SEED = 934;
const MINUTE = 60_000;

/**
 * Creates `count` PackageSource/AG pairs whose first Ready verdict source-watcher loses, in
 * batches of `batch` with `gapMs` of virtual time between batches (so stalls, and the due times
 * of the follow-up alarm, spread over the virtual clock as in a real install).
 */
async function createStuckPairs(
  system: System,
  raw: RawKube,
  namespace: string,
  count: number,
  spread: { batch: number; gapMs: number } = { batch: count, gapMs: 0 },
  losses: 'first' | 'every' = 'first',
): Promise<string[]> {
  const names = Array.from(
    { length: count },
    (_, i) => `${namespace}-${String(i).padStart(3, '0')}`,
  );
  // The loss must be armed before source-watcher first sees the AG.
  const rule = losses === 'first' ? { times: 1 } : {};
  for (const name of names) system.sim.loseConditionsWrite(`${namespace}/${name}`, rule);
  for (let at = 0; at < names.length; at += spread.batch) {
    await pool(names.slice(at, at + spread.batch), 16, async (name) => {
      await raw.createAg(namespace, name, await createOwner(raw, name), 'compact');
    });
    if (spread.gapMs > 0) await system.advance(spread.gapMs);
  }
  return names.map((name) => `${namespace}/${name}`);
}

/**
 * Ready.lastTransitionTime of the stuck AG: its last Ready=Unknown version before the first
 * force's claim (versions are in watch order; several can share one virtual instant).
 */
function readyUnknownSince(system: System, p: AgProgress): number {
  const versions = system.progress.agVersions(p.ag);
  const claim = versions.findIndex((v) => v.annotations[ANNOTATION_ATTEMPTS] !== undefined);
  const before = claim < 0 ? versions : versions.slice(0, claim);
  const unknown = before.filter((v) => v.status === 'Unknown' && !v.deleted);
  const ltt = parseRfc3339(unknown[unknown.length - 1]?.lastTransitionTime);
  if (ltt === null) throw new Error(`${p.ag}: no Ready=Unknown version before the first force`);
  return ltt;
}

function firstStall(p: AgProgress): number {
  const stall = p.stalls[0];
  if (stall === undefined) throw new Error(`${p.ag}: no stall was recorded`);
  return stall;
}

/** Seconds from each AG's first stall to its first force. */
function stallToFirstForceS(system: System, keys: readonly string[]): number[] {
  return keys.map((k) => {
    const p = system.progress.of(k);
    const force = p.forces[0];
    if (force === undefined) throw new Error(`${k}: no force`);
    return (force.claimedAt - firstStall(p)) / 1000;
  });
}

/** P1's two rows: the p50 (reported) and the p99 against the target. */
function p1Rows(
  metric: string,
  p50: number,
  p99: number,
  detail: Record<string, unknown>,
  targetNote = '',
): BenchRow[] {
  const row = valueRowsOf('P1', detail);
  return [
    row({ metric: `${metric}: p50`, value: p50, unit: 's', ...REPORT_ONLY }),
    row({
      metric: `${metric}: p99`,
      value: p99,
      unit: 's',
      target: `p99 <= ${P1_TARGET_S} s${targetNote}`,
      pass: p99 <= P1_TARGET_S,
    }),
  ];
}

export const p1: BenchModule = {
  id: 'P1',
  title: 'stall -> first force (early detection)',
  async run(ctx) {
    return [...(await p1Virtual(ctx)), ...(await p1Real(ctx))];
  },
};

/** P1 on the real clock: wall-clock lost write -> first force, with the machine's load. */
async function p1Real(ctx: BenchContext): Promise<BenchRow[]> {
  const namespace = 'bench-p1-real';
  const P1_AGS = p1RealAgs();
  const recorded = {
    realClock: true,
    sourceWatcher: { buildTimeMs: RECORDED_BUILD_MS, concurrency: RECORDED_WORKERS },
  };
  return withBenchSystem(ctx, namespace, SEED, recorded, async (system, { raw }) => {
    const loads: number[] = [loadavg()[0] ?? 0];
    const sampler = setInterval(() => loads.push(loadavg()[0] ?? 0), 1_000);
    const started = performance.now();
    try {
      const keys = await createStuckPairs(system, raw, namespace, P1_AGS, P1_REAL_SPREAD);
      ctx.log(`  real clock: ${P1_AGS} pairs created; waiting for the first forces`);
      const deadline = Date.now() + 180_000;
      while (!keys.every((k) => system.progress.of(k).forces.length > 0)) {
        if (Date.now() > deadline) {
          const missing = keys.filter((k) => system.progress.of(k).forces.length === 0);
          throw new Error(`real clock: no first force within 180 s for ${missing.length} AGs`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      const sinceStallS = stallToFirstForceS(system, keys);
      loads.push(loadavg()[0] ?? 0);
      const p50 = percentile(sinceStallS, 50);
      const p99 = percentile(sinceStallS, 99);
      const wallS = (performance.now() - started) / 1000;
      const load = loadSummary(loads);
      ctx.log(
        `  real clock: p50 ${p50.toFixed(2)} s, p99 ${p99.toFixed(2)} s after the lost write ` +
          `(load ${load.min.toFixed(1)}-${load.max.toFixed(1)}, wall ${wallS.toFixed(0)} s)`,
      );
      const detail = {
        ags: P1_AGS,
        clock: 'real (wall-clock)',
        sourceWatcher: { buildTimeMs: RECORDED_BUILD_MS, workers: RECORDED_WORKERS },
        install: P1_REAL_SPREAD,
        minS: Math.min(...sinceStallS),
        maxS: Math.max(...sinceStallS),
        overTargetCount: sinceStallS.filter((s) => s > P1_TARGET_S).length,
        loadAverage1m: load,
        wallSeconds: Math.round(wallS),
      };
      const where = `real clock, ${P1_AGS} AGs, load ${load.min.toFixed(1)}-${load.max.toFixed(1)}`;
      return p1Rows(`lost write -> first force, ${where}`, p50, p99, detail);
    } finally {
      clearInterval(sampler);
    }
  });
}

/** P1 on the virtual clock: a logic check (only waited timers can show up in the time). */
function p1Virtual(ctx: BenchContext): Promise<BenchRow[]> {
  const P1_AGS = p1Ags();
  const namespace = 'bench-p1';
  return withBenchSystem(ctx, namespace, SEED, {}, async (system, { raw }) => {
    const started = performance.now();
    const keys = await createStuckPairs(system, raw, namespace, P1_AGS, P1_SPREAD);
    ctx.log(`  ${P1_AGS} pairs created; running the virtual clock`);
    await system.runUntil(() => keys.every((k) => system.progress.of(k).forces.length > 0), {
      maxVirtualMs: 10 * MINUTE,
      what: 'a first force of every stuck AG',
    });
    const sinceStallS = stallToFirstForceS(system, keys);
    const p50 = percentile(sinceStallS, 50);
    const p99 = percentile(sinceStallS, 99);
    const wallS = (performance.now() - started) / 1000;
    ctx.log(
      `  p50 ${p50.toFixed(2)} s, p99 ${p99.toFixed(2)} s after the lost write (wall ${wallS.toFixed(0)} s)`,
    );
    const detail = {
      ags: P1_AGS,
      minS: Math.min(...sinceStallS),
      maxS: Math.max(...sinceStallS),
      overTargetCount: sinceStallS.filter((s) => s > P1_TARGET_S).length,
      wallSeconds: Math.round(wallS),
    };
    return p1Rows(
      `logic check, virtual clock: stall -> first force with the signal, ${P1_AGS} AGs`,
      p50,
      p99,
      detail,
      ' (timers only)',
    );
  });
}

export const p2: BenchModule = {
  id: 'P2',
  title: 'stall -> SourceWatcherStalled',
  run(ctx) {
    const namespace = 'bench-p2';
    const P2_AGS = p2Ags();
    return withBenchSystem(ctx, namespace, SEED, {}, async (system, { raw }) => {
      // source-watcher never heals them: every build loses its verdict, the first one and every
      // rebuild a force asks for. (Arming that after the first stall is too late: early detection
      // forces at the lost write, and a short rebuild can succeed before the runner looks.)
      const keys = await createStuckPairs(system, raw, namespace, P2_AGS, undefined, 'every');
      await system.runUntil(() => keys.every((k) => system.progress.of(k).stalledAt !== null), {
        maxVirtualMs: 20 * MINUTE,
        what: 'SourceWatcherStalled on every PackageSource',
      });
      const fromUnknownS: number[] = [];
      const seconds = keys.map((k) => {
        const p = system.progress.of(k);
        const stalledAt = p.stalledAt ?? NaN;
        fromUnknownS.push((stalledAt - readyUnknownSince(system, p)) / 1000);
        return (stalledAt - firstStall(p)) / 1000;
      });
      const worst = Math.max(...seconds);
      ctx.log(
        `  worst ${(worst / 60).toFixed(2)} min, best ${(Math.min(...seconds) / 60).toFixed(2)} min`,
      );
      return [
        valueRow({
          id: 'P2',
          metric: `stall -> SourceWatcherStalled, source-watcher never heals, worst of ${P2_AGS}`,
          value: worst / 60,
          unit: 'min',
          target: '<= 12.5 min, always < 15 min',
          pass: worst <= P2_TARGET_S && worst < P2_BUDGET_S,
          detail: {
            ags: P2_AGS,
            bestMin: Math.min(...seconds) / 60,
            medianMin: percentile(seconds, 50) / 60,
            worstFromReadyUnknownMin: Math.max(...fromUnknownS) / 60,
            forcesPerAg: keys.map((k) => system.progress.of(k).forces.length),
          },
        }),
      ];
    });
  },
};
