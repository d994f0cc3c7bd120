// P1 (stall -> first force) and P2 (stall -> SourceWatcherStalled), measured with the end-to-end
// harness (test/harness/system.ts): the real functions over HTTP, the Knative emulation routed by
// knative/ (PingSource jitter and pick-up lag included), the source-watcher simulator and the real
// test API server, all on one virtual clock. Times are virtual, read from the harness's progress
// log (its own watch of the world), never from the functions.
//
// P1 is the time from the lost write to the first force, with the defaults: the lost write of a
// build leaves the signal (outputs moved while Ready stayed Unknown), so no grace period is waited
// out (docs/adr/0014-early-detection.md). P2 is the verdict for AGs source-watcher never heals.

import { KubeConfig } from '@kubernetes/client-node';
import { createSystem, parseRfc3339, type AgProgress, type System } from '../harness/system.js';
import { deleteAlarm } from '../harness/system/world.js';
import { createRawKube, pool, type RawKube } from './raw-kube.js';
import { percentile } from './stats.js';
import { valueRow, type BenchContext, type BenchModule, type BenchRow } from './types.js';

export const P1_AGS = 200;
export const P2_AGS = 20;
/** P1's install: 10 pairs every 7.3 virtual seconds (about 2.5 minutes for 200). */
export const P1_SPREAD = { batch: 10, gapMs: 7_300 };
/** Issue 13: stall -> first force p99 within 3 s when the stall left the signal. */
export const P1_TARGET_S = 3;
export const P2_TARGET_S = 12.5 * 60;
export const P2_BUDGET_S = 15 * 60;
const SEED = 934;
const MINUTE = 60_000;
const ATTEMPTS_ANNOTATION = 'cozystack.io/source-watcher-recovery-attempts';

async function withSystem<T>(
  ctx: BenchContext,
  namespace: string,
  run: (system: System, raw: RawKube) => Promise<T>,
): Promise<T> {
  const server = await ctx.apiServer();
  const kc = new KubeConfig();
  kc.loadFromFile(server.kubeconfigPath);
  const raw = createRawKube(kc);
  const system = await createSystem({
    kubeConfig: kc,
    serviceAccountTokens: server.serviceAccountTokens,
    pingSeed: SEED,
    sourceWatcher: { seed: SEED },
  });
  try {
    return await run(system, raw);
  } finally {
    await system.stop();
    // Leave a clean world for the rows that follow (they count writes).
    await raw.deleteAllAgs(namespace);
    await raw.deleteAllPackageSources();
    await deleteAlarm(kc);
  }
}

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
      const ps = await raw.createPackageSource(name);
      await raw.createAg(namespace, name, { name, uid: ps.metadata?.uid ?? '' }, 'compact');
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
  const claim = versions.findIndex((v) => v.annotations[ATTEMPTS_ANNOTATION] !== undefined);
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

export const p1: BenchModule = {
  id: 'P1',
  title: 'stall -> first force (early detection)',
  run(ctx) {
    const namespace = 'bench-p1';
    return withSystem(ctx, namespace, async (system, raw) => {
      const started = performance.now();
      const keys = await createStuckPairs(system, raw, namespace, P1_AGS, P1_SPREAD);
      ctx.log(`  ${P1_AGS} pairs created; running the virtual clock`);
      await system.runUntil(() => keys.every((k) => system.progress.of(k).forces.length > 0), {
        maxVirtualMs: 10 * MINUTE,
        what: 'a first force of every stuck AG',
      });
      const sinceStallS = keys.map((k) => {
        const p = system.progress.of(k);
        const force = p.forces[0];
        if (force === undefined) throw new Error(`${k}: no force`);
        return (force.claimedAt - firstStall(p)) / 1000;
      });
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
      const rows: BenchRow[] = [
        valueRow({
          id: 'P1',
          metric: `stall -> first force with the signal, ${P1_AGS} AGs: p50`,
          value: p50,
          unit: 's',
          target: 'report',
          pass: null,
          detail,
        }),
        valueRow({
          id: 'P1',
          metric: `stall -> first force with the signal, ${P1_AGS} AGs: p99`,
          value: p99,
          unit: 's',
          target: `p99 <= ${P1_TARGET_S} s`,
          pass: p99 <= P1_TARGET_S,
          detail,
        }),
      ];
      return rows;
    });
  },
};

export const p2: BenchModule = {
  id: 'P2',
  title: 'stall -> SourceWatcherStalled',
  run(ctx) {
    const namespace = 'bench-p2';
    return withSystem(ctx, namespace, async (system, raw) => {
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
