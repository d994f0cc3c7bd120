// The lost-write signal (signal B): a pure comparison of an AG with its previous version, and how
// it opens the gate. The honest/stuck sequences follow the order source-watcher v2.1.0 was
// recorded to write in (test/recorded/source-watcher-v2.1.0/README.md): in-progress conditions, then the verdict,
// then the rest of status; a stall loses the verdict and keeps the rest.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decide,
  gateReason,
  historyCouldHelp,
  needsHistory,
  LOST_WRITE,
  lostWriteCandidate,
  NO_SIGNALS,
  nextCheckAt,
  outputsMovedWhileUnknown,
  type ArtifactGenerator,
} from '../../../shared/core/index.js';
import { force, healthy, ignore } from './decisions.js';
import { CFG, cfgWith, makeAg, SEC, STALL } from './fixtures.js';
import { buildFailed, marker, progressing, succeeded } from '../../support/conditions.js';

type Mutate = (ag: ArtifactGenerator) => void;

function variant(base: ArtifactGenerator, ...mutations: Mutate[]): ArtifactGenerator {
  const copy = structuredClone(base);
  for (const m of mutations) m(copy);
  return copy;
}

/** Sets the inventory to the one artifact `platform` with this digest and file. */
const inventory =
  (digest: string, filename: string): Mutate =>
  (ag) => {
    ag.status!.inventory = [{ name: 'platform', namespace: 'cozy-system', digest, filename }];
  };
const newInventory = inventory('sha256:2', 'b.tar.gz');
const newDigest: Mutate = (ag) => {
  ag.status!.observedSourcesDigest = 'sha256:sources-2';
};
const handled =
  (at: string): Mutate =>
  (ag) => {
    ag.status!.lastHandledReconcileAt = at;
  };
const noOutputs: Mutate = (ag) => {
  delete ag.status!.inventory;
  delete ag.status!.observedSourcesDigest;
};
const rv =
  (v: string): Mutate =>
  (ag) => {
    ag.metadata!.resourceVersion = v;
  };

const stuckNow = makeAg(); // Ready Unknown since STALL, outputs saved
const NOW = STALL + 1 * SEC;

describe('outputsMovedWhileUnknown', () => {
  it.each<[string, ArtifactGenerator | null | undefined, ArtifactGenerator, boolean]>([
    ['inventory + digest moved (S2, S6, S10)', variant(stuckNow, noOutputs), stuckNow, true],
    ['only the inventory moved (S7, spec edit)', variant(stuckNow, newInventory), stuckNow, true],
    ['only the digest moved', variant(stuckNow, newDigest), stuckNow, true],
    [
      'only lastHandledReconcileAt moved (a requestedAt bump on a stuck AG)',
      stuckNow,
      variant(stuckNow, handled('2026-11-29T16:31:00Z')),
      true,
    ],
    [
      'nothing moved (an annotation or label change)',
      stuckNow,
      variant(stuckNow, rv('101')),
      false,
    ],
    ['no previous version', null, stuckNow, false],
    ['previous version unknown', undefined, stuckNow, false],
    [
      'previous Ready was True: the in-progress write of an honest build',
      variant(stuckNow, (ag) => (ag.status!.conditions = [succeeded(STALL - 60 * SEC)])),
      stuckNow,
      false,
    ],
    [
      'previous Ready was our marker',
      variant(stuckNow, noOutputs, (ag) => (ag.status!.conditions = [marker(STALL)])),
      stuckNow,
      false,
    ],
    [
      'previous Ready Unknown since another time (a new Unknown episode)',
      variant(
        stuckNow,
        noOutputs,
        (ag) => (ag.status!.conditions = [progressing(STALL - 5 * SEC)]),
      ),
      stuckNow,
      false,
    ],
    [
      'previous on an older generation (a spec edit between)',
      variant(stuckNow, noOutputs, (ag) => {
        ag.metadata!.generation = 0;
        ag.status!.conditions = [progressing(STALL, 0)];
      }),
      stuckNow,
      false,
    ],
    [
      'previous is another object with the same name (recreated)',
      variant(stuckNow, noOutputs, (ag) => (ag.metadata!.uid = 'other-uid')),
      stuckNow,
      false,
    ],
    [
      'current Ready is True (the honest verdict landed first)',
      variant(stuckNow, noOutputs),
      variant(stuckNow, (ag) => (ag.status!.conditions = [succeeded(STALL)])),
      false,
    ],
    [
      'current Ready is an honest failure',
      variant(stuckNow, noOutputs),
      variant(stuckNow, (ag) => (ag.status!.conditions = [buildFailed(STALL)])),
      false,
    ],
    ['current has no outputs', stuckNow, variant(stuckNow, noOutputs), false],
    [
      'current Ready has no lastTransitionTime',
      variant(stuckNow, noOutputs),
      variant(stuckNow, (ag) => {
        const ready = ag.status!.conditions!.find((c) => c.type === 'Ready')!;
        delete ready.lastTransitionTime;
      }),
      false,
    ],
  ])('%s', (_name, previous, current, expected) => {
    expect(outputsMovedWhileUnknown(previous, current)).toBe(expected);
  });

  it('tolerates junk inventories without throwing', () => {
    const junk = variant(stuckNow, (ag) => {
      (ag.status as Record<string, unknown>)['inventory'] = [null, 'x', 3];
    });
    expect(outputsMovedWhileUnknown(junk, stuckNow)).toBe(true);
    expect(outputsMovedWhileUnknown(junk, junk)).toBe(false);
  });
});

describe('the signal in the gate and the decision table', () => {
  it('opens the gate as lost-write before the time rule would', () => {
    expect(gateReason(stuckNow, NOW, CFG)).toBeNull();
    expect(gateReason(stuckNow, NOW, CFG, LOST_WRITE)).toBe('lost-write');
    expect(decide(stuckNow, NOW, CFG, LOST_WRITE)).toEqual(force(1, 'lost-write'));
    expect(nextCheckAt(stuckNow, NOW, CFG, decide(stuckNow, NOW, CFG, LOST_WRITE))).toBe(NOW);
  });

  it('is ignored with early detection off', () => {
    const off = cfgWith({ earlyDetection: false });
    expect(gateReason(stuckNow, NOW, off, LOST_WRITE)).toBeNull();
    expect(decide(stuckNow, NOW, off, LOST_WRITE).kind).toBe('healthy');
    expect(historyCouldHelp(stuckNow, off)).toBe(false);
    expect(decide(stuckNow, NOW, off)).toMatchObject({ kind: 'healthy', needsHistory: false });
  });

  it('is ignored in mode off, and for an AG being deleted', () => {
    expect(decide(stuckNow, NOW, cfgWith({ mode: 'off' }), LOST_WRITE).kind).toBe('healthy');
    expect(decide(makeAg({ deleting: true }), NOW, CFG, LOST_WRITE)).toEqual(ignore('deleting'));
  });

  it('does not open the gate for an AG that no longer has the stall shape', () => {
    const settled = makeAg({ ready: succeeded(STALL) });
    expect(gateReason(settled, NOW, CFG, LOST_WRITE)).toBeNull();
    expect(decide(settled, NOW, CFG, LOST_WRITE)).toEqual(healthy);
  });

  it('counts like any other force: attempts and backoff are unchanged', () => {
    // After a signal force, a second lost write waits out the backoff like a timed one.
    const afterForce = makeAg({
      attempts: '1',
      last: STALL,
      requestedAt: STALL,
      ready: progressing(STALL + 2 * SEC),
    });
    expect(decide(afterForce, STALL + 10 * SEC, CFG, LOST_WRITE)).toMatchObject({
      kind: 'wait',
      attempts: 1,
      gate: 'rebuilding',
    });
    expect(decide(afterForce, STALL + 30 * SEC, CFG, LOST_WRITE)).toEqual(force(2, 'rebuilding'));
  });

  it.each<[string, ArtifactGenerator, boolean]>([
    ['a candidate', stuckNow, true],
    ['healthy', makeAg({ ready: succeeded(STALL) }), false],
    ['Ready missing', makeAg({ ready: null }), false],
    ['no outputs yet (first build in progress)', makeAg({ inventory: false }), false],
    ['on an older generation', makeAg({ generation: 2, ready: progressing(STALL, 1) }), false],
  ])('historyCouldHelp: %s', (_n, ag, expected) => {
    expect(lostWriteCandidate(ag)).toBe(expected);
    expect(historyCouldHelp(ag, CFG)).toBe(expected);
    // decide asks for the history exactly then, and only while it has not been read.
    const unread = decide(ag, NOW, CFG);
    expect(needsHistory(unread)).toBe(expected);
    expect(needsHistory(decide(ag, NOW, CFG, NO_SIGNALS))).toBe(false);
    expect(needsHistory(decide(ag, NOW, CFG, LOST_WRITE))).toBe(false);
  });

  it('NO_SIGNALS is the default and changes nothing', () => {
    // The same decision as with no signals given, except that the history has been read.
    expect(decide(stuckNow, NOW, CFG, NO_SIGNALS)).toEqual({
      ...decide(stuckNow, NOW, CFG),
      needsHistory: false,
    });
    expect(needsHistory(decide(stuckNow, NOW, CFG))).toBe(true);
  });
});

// Consecutive objects of one AG as source-watcher writes them. Each build: in-progress conditions
// (Ready Unknown, the old outputs), then the verdict (conditions request), then the rest of status
// (only the keys that changed). A lost verdict skips the middle object.
interface BuildSpec {
  inventoryChanges: boolean;
  digestChanges: boolean;
  requested: boolean;
  verdictLost: boolean;
  failed: boolean;
}

function objectsOf(builds: BuildSpec[]): ArtifactGenerator[] {
  let current = makeAg({ ready: succeeded(STALL - 3600 * SEC) });
  const out: ArtifactGenerator[] = [current];
  let t = STALL;
  builds.forEach((b, i) => {
    const push = (m: Mutate): void => {
      current = variant(current, m);
      out.push(current);
    };
    t += 60 * SEC;
    push((ag) => {
      const ready = ag.status!.conditions!.find((c) => c.type === 'Ready');
      // meta.SetStatusCondition: the time moves only when the status changes.
      const since = ready?.status === 'Unknown' ? ready.lastTransitionTime : undefined;
      ag.status!.conditions = [
        { ...progressing(t), ...(since !== undefined ? { lastTransitionTime: since } : {}) },
      ];
    });
    if (!b.verdictLost) {
      push(
        (ag) => (ag.status!.conditions = [b.failed ? buildFailed(t + SEC) : succeeded(t + SEC)]),
      );
    }
    const rest: Mutate[] = [];
    if (b.inventoryChanges && !b.failed) rest.push(inventory(`sha256:b${i}`, `${i}.tgz`));
    if (b.digestChanges && !b.failed)
      rest.push((ag) => (ag.status!.observedSourcesDigest = `d${i}`));
    if (b.requested) rest.push(handled(`2026-11-29T17:${String(i % 60).padStart(2, '0')}:00Z`));
    if (rest.length > 0) push((ag) => rest.forEach((m) => m(ag)));
  });
  return out;
}

const buildArb = fc.record({
  inventoryChanges: fc.boolean(),
  digestChanges: fc.boolean(),
  requested: fc.boolean(),
  verdictLost: fc.constant(false),
  failed: fc.boolean(),
});

describe('property: the signal over source-watcher write sequences', () => {
  it('never fires between consecutive objects of honest builds', () => {
    fc.assert(
      fc.property(fc.array(buildArb, { minLength: 1, maxLength: 8 }), (builds) => {
        const objects = objectsOf(builds);
        for (let i = 1; i < objects.length; i++) {
          expect(outputsMovedWhileUnknown(objects[i - 1], objects[i]!)).toBe(false);
        }
      }),
    );
  });

  it('fires on the object after a lost verdict exactly when the rest of status changed something', () => {
    fc.assert(
      fc.property(
        fc.array(buildArb, { maxLength: 4 }),
        buildArb.map((b) => ({ ...b, verdictLost: true, failed: false })),
        (before, lost) => {
          const objects = objectsOf([...before, lost]);
          const changed = lost.inventoryChanges || lost.digestChanges || lost.requested;
          const last = objects[objects.length - 1]!;
          const prev = objects[objects.length - 2];
          expect(outputsMovedWhileUnknown(prev, last)).toBe(changed);
          // Without a change the stall leaves no signal: only the time rule catches it.
          if (!changed) expect(gateReason(last, STALL, CFG, NO_SIGNALS)).toBeNull();
        },
      ),
    );
  });
});
