// The simulator's per-AG build time (setBuildTimeOf) and its request hook (onRequest), against the
// real test API server on a virtual clock: AGs rebuilding at the same time, each for its own
// duration, keep Ready Unknown for exactly that long with nothing written in between.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { VirtualClock } from '../harness/virtual-clock.js';
import type { SimRequest, SourceWatcherSim } from '../harness/source-watcher-sim/index.js';
import { uniqueName } from '../support/apiserver.js';
import { createSimAg, startSimWorld } from './sim-world.js';

const GLOBAL_BUILD_MS = 1_000;

let namespace: string;
let clock: VirtualClock;
let sim: SourceWatcherSim;
let requests: SimRequest[];

beforeEach(async () => {
  ({ namespace, clock, sim, requests } = await startSimWorld('swbt', {
    buildTimeMs: GLOBAL_BUILD_MS,
    concurrency: 8,
  }));
});

afterEach(async () => {
  await sim.stop();
});

async function healthyAg(name: string): Promise<string> {
  const created = await createSimAg(namespace, name, ['out']);
  await sim.observed(created.metadata.resourceVersion ?? '');
  await clock.advance(2 * GLOBAL_BUILD_MS);
  await sim.idle();
  return `${namespace}/${name}`;
}

function readyOf(r: SimRequest): string | undefined {
  const conditions = (r.body as { status?: { conditions?: { type: string; status: string }[] } })
    ?.status?.conditions;
  return conditions?.find((c) => c.type === 'Ready')?.status;
}

/** Virtual ms from the in-progress write to the Ready=True write, and what was written between. */
function buildWindow(key: string): { ms: number; between: string[] } {
  const mine = requests.filter((r) => r.key === key && r.verb === 'patch');
  const start = mine.findLastIndex((r) => readyOf(r) === 'Unknown');
  const end = mine.findIndex((r, i) => i > start && readyOf(r) === 'True');
  const between = mine.slice(start + 1, end).map((r) => JSON.stringify(r.body));
  return { ms: (mine[end]?.at ?? NaN) - (mine[start]?.at ?? NaN), between };
}

describe('source-watcher simulator: per-AG build time', () => {
  it('rebuilds AGs at the same time, each for its own duration (200 ms to 110 s)', async () => {
    const rows = [
      { name: 'fast', ms: 200 },
      { name: 'medium', ms: 7_500 },
      { name: 'slow', ms: 110_000 },
      { name: 'global', ms: undefined },
    ];
    const keys: string[] = [];
    for (const row of rows) keys.push(await healthyAg(uniqueName(row.name)));
    rows.forEach((row, i) => sim.setBuildTimeOf(keys[i] ?? '', row.ms));
    for (const key of keys) sim.setSourceRevision(key, 'v2');
    await clock.advance(120_000);
    await sim.idle();

    const got = keys.map((key) => ({
      key,
      buildTimeOf: sim.buildTimeOf(key),
      ...buildWindow(key),
    }));
    expect(got).toEqual(
      rows.map((row, i) => ({
        key: keys[i],
        buildTimeOf: row.ms ?? GLOBAL_BUILD_MS,
        ms: row.ms ?? GLOBAL_BUILD_MS,
        // Only the `{}` status patch of the in-progress write: nothing during the build.
        between: ['{}'],
      })),
    );
  });

  it('goes back to the global build time when cleared, and follows setBuildTime', async () => {
    const key = await healthyAg(uniqueName('ag'));
    sim.setBuildTimeOf(key, 30_000);
    sim.setBuildTimeOf(key, undefined);
    sim.setBuildTime(4_000);
    sim.setSourceRevision(key, 'v2');
    await clock.advance(10_000);
    await sim.idle();
    expect(buildWindow(key).ms).toBe(4_000);
  });

  it.each([
    { ms: -1, error: RangeError },
    { ms: Number.NaN, error: RangeError },
    { ms: Number.POSITIVE_INFINITY, error: RangeError },
  ])('rejects $ms and keeps the previous build time', ({ ms, error }) => {
    sim.setBuildTimeOf(`${namespace}/x`, 2_000);
    expect(() => sim.setBuildTimeOf(`${namespace}/x`, ms)).toThrow(error);
    expect(() => sim.setBuildTimeOf('not-a-key', 5)).toThrow(TypeError);
    expect(sim.buildTimeOf(`${namespace}/x`)).toBe(2_000);
  });
});

describe('source-watcher simulator: the request hook', () => {
  it('reports every GET and PATCH, and a lost conditions write as a 500 never sent', async () => {
    const name = uniqueName('ag');
    sim.loseConditionsWrite(`${namespace}/${name}`, { times: 1 });
    const key = await healthyAg(name);
    const mine = requests.filter((r) => r.key === key);
    expect(new Set(mine.map((r) => r.verb))).toEqual(new Set(['get', 'patch']));
    const lost = mine.filter((r) => r.lost);
    expect(lost).toEqual([
      expect.objectContaining({ verb: 'patch', subresource: 'status', code: 500, lost: true }),
    ]);
    expect(readyOf(lost[0] as SimRequest)).toBe('True');
    expect(mine.filter((r) => !r.lost).every((r) => r.code === 200)).toBe(true);
  });
});
