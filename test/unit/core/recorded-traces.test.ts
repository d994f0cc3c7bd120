// The signal over the recorded real source-watcher (test/recorded/source-watcher-v2.1.0/, S1-S10): every
// object of every trace, compared with the previous object of the same AG, as detect compares an
// event with the AG's stored previous version. The recorded fact (ADR 14, the README): every stall
// that ran a build moved its outputs while Ready stayed Unknown, and no honest in-progress object
// did. Which objects are stalls is read from the trace itself, not from the product: the object
// that source-watcher's next successful write produced after the fault proxy failed its Ready
// write. A trace missing from the recorded folder (or changed: SHA256SUMS) fails the test.

import { describe, expect, it } from 'vitest';
import { outputsMovedWhileUnknown, type ArtifactGenerator } from '../../../shared/core/index.js';
import { TRACES_DIR, traceTexts } from '../../support/sw-traces.js';

const TEXTS = traceTexts();
const SCENARIOS = ['S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S7', 'S8', 'S9', 'S10'];

interface TraceRecord {
  rec: string;
  seq?: number;
  key?: string;
  phase?: string;
  from?: string;
  code?: number;
  responseResourceVersion?: string | null;
  object?: ArtifactGenerator;
}

interface ObjectSeen {
  readonly file: string;
  readonly key: string;
  readonly rv: string;
  readonly phase: string;
  readonly previous: ArtifactGenerator | undefined;
  readonly object: ArtifactGenerator;
}

function traceFiles(): string[] {
  const files = [...TEXTS.keys()];
  for (const s of SCENARIOS) {
    if (!files.some((f) => f.startsWith(`${s}-`))) throw new Error(`${TRACES_DIR}: no ${s} trace`);
  }
  return files.sort();
}

function records(file: string): TraceRecord[] {
  return (TEXTS.get(file) ?? '')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as TraceRecord);
}

/** Ready Unknown on the current generation: the single-snapshot shape of a stall. */
function unknownOnGeneration(ag: ArtifactGenerator): boolean {
  const ready = ag.status?.conditions?.find((c) => c.type === 'Ready');
  return ready?.status === 'Unknown' && ready.observedGeneration === ag.metadata?.generation;
}

/** Every AG object of every trace, in delivery order, with the previous one of the same AG. */
function walk(): { objects: ObjectSeen[]; stuckRvs: Map<string, Set<string>>; faults: number } {
  const objects: ObjectSeen[] = [];
  const stuckRvs = new Map<string, Set<string>>();
  let faults = 0;
  for (const file of traceFiles()) {
    const last = new Map<string, ArtifactGenerator>();
    const failedPending = new Set<string>();
    const stuck = new Set<string>();
    for (const r of records(file)) {
      if (r.rec === 'request' && r.key !== undefined) {
        if (r.from?.startsWith('faultproxy') === true && r.code === 500) {
          faults++;
          failedPending.add(r.key);
        } else if (failedPending.has(r.key) && typeof r.responseResourceVersion === 'string') {
          // source-watcher's rest-of-status write after the lost Ready write: the stuck object.
          stuck.add(`${r.key}@${r.responseResourceVersion}`);
          failedPending.delete(r.key);
        }
      }
      if ((r.rec !== 'watch' && r.rec !== 'initial') || r.object === undefined || !r.key) continue;
      const rv = r.object.metadata?.resourceVersion ?? '';
      objects.push({
        file,
        key: r.key,
        rv,
        phase: r.phase ?? '',
        previous: last.get(r.key),
        object: r.object,
      });
      last.set(r.key, r.object);
    }
    stuckRvs.set(file, stuck);
  }
  return { objects, stuckRvs, faults };
}

const { objects, stuckRvs, faults } = walk();
const isStuck = (o: ObjectSeen): boolean => stuckRvs.get(o.file)?.has(`${o.key}@${o.rv}`) ?? false;
const fired = (o: ObjectSeen): boolean => outputsMovedWhileUnknown(o.previous, o.object);
/**
 * AGs that had a Ready write failed in any trace (s2/ag continues into S3): their scenario
 * objects are the stall and what followed it; their setup builds were honest.
 */
const faultedAgs = new Set(objects.filter(isStuck).map((o) => o.key));

describe('the lost-write signal over the recorded real source-watcher traces', () => {
  it('reads every trace and finds the five recorded stalls that ran a build', () => {
    expect(objects.length).toBeGreaterThan(100);
    // S2, S6, S7 and S10's ag-03 and ag-07 (S9's rule never fired: no build ran).
    expect(faults).toBe(5);
    expect(
      objects
        .filter(isStuck)
        .map((o) => `${o.file.split('-')[0]} ${o.key}`)
        .sort(),
    ).toEqual(['S10 s10/ag-03', 'S10 s10/ag-07', 'S2 s2/ag', 'S6 s6/ag', 'S7 s7/ag']);
  });

  it('fires on every stuck object: its outputs moved while Ready stayed Unknown', () => {
    const stuck = objects.filter(isStuck);
    expect(stuck.every((o) => unknownOnGeneration(o.object))).toBe(true);
    expect(stuck.filter((o) => !fired(o)).map((o) => `${o.file} ${o.key}@${o.rv}`)).toEqual([]);
  });

  it('fires on no honest in-progress object (32 recorded) and on no other object at all', () => {
    const honestInProgress = objects.filter(
      (o) =>
        unknownOnGeneration(o.object) &&
        (o.phase === 'setup' || (o.phase === 'scenario' && !faultedAgs.has(o.key))),
    );
    expect(honestInProgress).toHaveLength(32);
    expect(honestInProgress.filter(fired).map((o) => `${o.file} ${o.key}@${o.rv}`)).toEqual([]);
    expect(
      objects.filter((o) => fired(o) && !isStuck(o)).map((o) => `${o.file} ${o.key}@${o.rv}`),
    ).toEqual([]);
  });
});
