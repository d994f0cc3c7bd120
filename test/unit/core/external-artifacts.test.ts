// The heal decision (docs/adr/0038): table first, then properties over source-watcher's honest
// build in the order it writes (ExternalArtifacts, then Ready=True, then the inventory) and over
// foreign drift.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decideHeal,
  digestOwnerOf,
  generatorOf,
  matchesInventory,
  withObserved,
  LABEL_GENERATOR,
  type ArtifactGenerator,
  type EaDrift,
  type ExternalArtifact,
  type HealDecision,
  type InventoryEntry,
  type RecreateTarget,
} from '../../../shared/core/index.js';
import { readyWith } from '../../support/conditions.js';

const NS = 'cozy-system';
const UID = 'ag-uid-1';

const ownedBy = (manager: string) => ({
  manager,
  operation: manager === 'source-watcher' ? 'Apply' : 'Update',
  subresource: 'status',
  fieldsType: 'FieldsV1',
  fieldsV1: { 'f:status': { 'f:artifact': { 'f:digest': {}, 'f:revision': {} } } },
});

function ea(
  name: string,
  digest: string,
  owner: string = 'source-watcher',
  extra: Partial<{ uid: string; rv: string }> = {},
): ExternalArtifact {
  return {
    apiVersion: 'source.toolkit.fluxcd.io/v1',
    kind: 'ExternalArtifact',
    metadata: {
      namespace: NS,
      name,
      uid: extra.uid ?? `uid-${name}`,
      resourceVersion: extra.rv ?? '100',
      labels: { [LABEL_GENERATOR]: UID },
      managedFields: owner === 'none' ? [] : [ownedBy(owner)],
    },
    spec: {
      sourceRef: {
        apiVersion: 'source.extensions.fluxcd.io/v1beta1',
        kind: 'ArtifactGenerator',
        name: 'ag',
        namespace: NS,
      },
    },
    status: { artifact: { digest, revision: 'r', url: 'http://x', path: 'p' } },
  };
}

const inv = (name: string, digest: string): InventoryEntry => ({
  name,
  namespace: NS,
  digest,
  filename: `${name}.tar.gz`,
});

function ag(
  over: Partial<{
    ready: 'True' | 'False' | 'Unknown' | 'none';
    reason: string;
    observedGeneration: number;
    generation: number;
    inventory: InventoryEntry[];
    artifacts: string[];
    annotations: Record<string, string>;
    lastHandled: string;
    deleting: boolean;
  }> = {},
): ArtifactGenerator {
  const generation = over.generation ?? 1;
  const ready = over.ready ?? 'True';
  return {
    metadata: {
      namespace: NS,
      name: 'ag',
      uid: UID,
      resourceVersion: '200',
      generation,
      ...(over.annotations ? { annotations: over.annotations } : {}),
      ...(over.deleting ? { deletionTimestamp: '2026-12-01T10:00:00Z' } : {}),
    },
    spec: { artifacts: (over.artifacts ?? ['a', 'b']).map((name) => ({ name })) },
    status: {
      conditions:
        ready === 'none'
          ? []
          : [
              readyWith(
                ready,
                over.reason ?? (ready === 'True' ? 'Succeeded' : 'Progressing'),
                Date.UTC(2026, 11, 1, 10),
                over.observedGeneration ?? generation,
              ),
            ],
      inventory: over.inventory ?? [inv('a', 'sha256:a1'), inv('b', 'sha256:b1')],
      ...(over.lastHandled !== undefined ? { lastHandledReconcileAt: over.lastHandled } : {}),
    },
  };
}

const inStep = [ea('a', 'sha256:a1'), ea('b', 'sha256:b1')];
const leave = (why: string): HealDecision => ({ kind: 'leave', why }) as HealDecision;
const missing = (name: string): EaDrift => ({ kind: 'missing', namespace: NS, name });
const changed = (name: string): EaDrift => ({ kind: 'digest', namespace: NS, name });
/** The drifted ExternalArtifact `a` (uid u-a) to recreate, as last written by `owner`. */
const recreateA = (owner: string, resourceVersion: string): RecreateTarget => ({
  namespace: NS,
  name: 'a',
  uid: 'u-a',
  resourceVersion,
  owner,
});
const heal = (drift: EaDrift[], recreate: RecreateTarget[] = [], bump = true): HealDecision => ({
  kind: 'heal',
  drift,
  recreate,
  bump,
});
const pending = { 'reconcile.fluxcd.io/requestedAt': 't2' };
const handled = { 'reconcile.fluxcd.io/requestedAt': 't1' };

describe('decideHeal: the table', () => {
  it.each<[string, ArtifactGenerator, ExternalArtifact[], HealDecision]>([
    ['in step', ag(), inStep, leave('in-step')],
    ['an ExternalArtifact deleted', ag(), [ea('b', 'sha256:b1')], heal([missing('a')])],
    ['every ExternalArtifact deleted', ag(), [], heal([missing('a'), missing('b')])],
    [
      'digest changed by kubectl patch (the patcher owns it): recreate and bump',
      ag(),
      [ea('a', 'sha256:evil', 'kubectl-patch', { uid: 'u-a', rv: '150' }), ea('b', 'sha256:b1')],
      heal([changed('a')], [recreateA('kubectl-patch', '150')]),
    ],
    [
      'digest changed and no one owns it (managedFields cleared): bump only',
      ag(),
      [ea('a', 'sha256:evil', 'none'), ea('b', 'sha256:b1')],
      heal([changed('a')]),
    ],
    [
      'digest differs but source-watcher wrote it (a build in flight): honest',
      ag(),
      [ea('a', 'sha256:a2'), ea('b', 'sha256:b2')],
      leave('honest-build'),
    ],
    [
      'an artifact removed from the spec, its ExternalArtifact garbage-collected: honest',
      ag({ artifacts: ['b'] }),
      [ea('b', 'sha256:b1')],
      leave('honest-build'),
    ],
    [
      'an extra ExternalArtifact (a new artifact being built): honest',
      ag(),
      [...inStep, ea('c', 'sha256:c1')],
      leave('honest-build'),
    ],
    ['building (Ready Unknown)', ag({ ready: 'Unknown' }), [], leave('not-ready')],
    ['no Ready', ag({ ready: 'none' }), [], leave('not-ready')],
    [
      'Ready on an older generation',
      ag({ generation: 2, observedGeneration: 1 }),
      [],
      leave('not-ready'),
    ],
    ['being deleted', ag({ deleting: true }), [], leave('deleting')],
    [
      'our marker',
      ag({ ready: 'False', reason: 'SourceWatcherRecoveryForced' }),
      [],
      leave('recovery'),
    ],
    [
      'a recovery in progress (tracking annotations)',
      ag({ annotations: { 'cozystack.io/source-watcher-recovery-attempts': '1' } }),
      [],
      leave('recovery'),
    ],
    [
      'a requestedAt not handled yet (our bump, or flux reconcile)',
      ag({ annotations: pending, lastHandled: 't1' }),
      [],
      leave('request-pending'),
    ],
    [
      'a handled requestedAt does not block',
      ag({ annotations: handled, lastHandled: 't1' }),
      [ea('b', 'sha256:b1')],
      heal([missing('a')]),
    ],
    [
      'request pending and a foreign-owned digest: recreate, no second bump',
      ag({ annotations: pending, lastHandled: 't1' }),
      [ea('a', 'sha256:evil', 'kubectl-edit', { uid: 'u-a', rv: '7' }), ea('b', 'sha256:b1')],
      heal([changed('a')], [recreateA('kubectl-edit', '7')], false),
    ],
    [
      'failed by the conflict (ReconciliationFailed), foreign owner still there: recreate and bump',
      ag({
        ready: 'False',
        reason: 'ReconciliationFailed',
        annotations: handled,
        lastHandled: 't1',
      }),
      [ea('a', 'sha256:evil', 'kubectl-patch', { uid: 'u-a', rv: '9' }), ea('b', 'sha256:b1')],
      heal([changed('a')], [recreateA('kubectl-patch', '9')]),
    ],
    [
      'failing honestly (BuildFailed) with an ExternalArtifact missing: left to source-watcher',
      ag({ ready: 'False', reason: 'BuildFailed' }),
      [ea('b', 'sha256:b1')],
      leave('not-ready'),
    ],
  ])('%s', (_name, a, eas, want) => {
    expect(decideHeal(a, eas)).toEqual(want);
  });
});

describe('generatorOf and digestOwnerOf', () => {
  it('reads the AG from spec.sourceRef, the namespace defaulting to the object', () => {
    const e = ea('a', 'd');
    expect(generatorOf(e)).toEqual({ namespace: NS, name: 'ag' });
    delete e.spec!.sourceRef!.namespace;
    expect(generatorOf(e)).toEqual({ namespace: NS, name: 'ag' });
  });
  it.each<[string, unknown]>([
    ['another kind', { kind: 'GitRepository', name: 'x' }],
    ['another group', { apiVersion: 'other.io/v1', kind: 'ArtifactGenerator', name: 'x' }],
    ['a bad name', { kind: 'ArtifactGenerator', name: 'Not_A_Name' }],
    ['no sourceRef', undefined],
  ])('null for %s', (_n, sourceRef) => {
    const e = ea('a', 'd');
    (e.spec as Record<string, unknown>)['sourceRef'] = sourceRef;
    expect(generatorOf(e)).toBeNull();
  });
  it('source-watcher first when the digest is shared, else the first owner, else none', () => {
    const e = ea('a', 'd', 'kubectl-patch');
    expect(digestOwnerOf(e)).toBe('kubectl-patch');
    e.metadata!.managedFields!.push(ownedBy('source-watcher'));
    expect(digestOwnerOf(e)).toBe('source-watcher');
    expect(digestOwnerOf(ea('a', 'd', 'none'))).toBe('none');
    expect(digestOwnerOf({ metadata: { managedFields: 'junk' as never } })).toBe('none');
  });
});

describe('withObserved: the event laid over a lagging list', () => {
  it('drops a deleted object the cached list still shows', () => {
    expect(withObserved(inStep, inStep[0]!, true).map((e) => e.metadata?.name)).toEqual(['b']);
  });
  it('does not drop a re-created object (another uid) for a late delete', () => {
    const recreated = ea('a', 'sha256:a1', 'source-watcher', { uid: 'new' });
    expect(withObserved([recreated, inStep[1]!], inStep[0]!, true)).toHaveLength(2);
  });
  it('replaces an older listed copy, keeps a newer one, adds a missing one', () => {
    const newer = ea('a', 'sha256:x', 'kubectl-patch', { rv: '101' });
    expect(withObserved(inStep, newer, false)[0]).toBe(newer);
    const older = ea('a', 'sha256:x', 'kubectl-patch', { rv: '99' });
    expect(withObserved(inStep, older, false)[0]).toBe(inStep[0]);
    expect(withObserved([inStep[1]!], newer, false)).toHaveLength(2);
  });
});

// ---- properties -------------------------------------------------------------------------

const names = fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e'), {
  minLength: 1,
  maxLength: 5,
});

/**
 * Every object state of an honest build, in source-watcher's order: in-progress (Ready Unknown),
 * each ExternalArtifact applied in turn (source-watcher owns its digest), Ready=True (conditions
 * patch), then the inventory (rest of status). Returns the AG versions and EA versions written.
 */
function honestBuild(artifacts: string[], oldDigest: string, newDigest: string) {
  const before = ag({ artifacts, inventory: artifacts.map((n) => inv(n, `${oldDigest}-${n}`)) });
  const oldEas = artifacts.map((n) => ea(n, `${oldDigest}-${n}`));
  const ags: ArtifactGenerator[] = [
    before,
    ag({ ready: 'Unknown', artifacts, inventory: before.status!.inventory! }),
  ];
  const easVersions: ExternalArtifact[][] = [oldEas];
  let current = [...oldEas];
  for (const [i, n] of artifacts.entries()) {
    current = current.map((e, j) =>
      j === i ? ea(n, `${newDigest}-${n}`, 'source-watcher', { rv: String(200 + i) }) : e,
    );
    easVersions.push(current);
  }
  ags.push(ag({ artifacts, inventory: before.status!.inventory! })); // Ready=True, old inventory
  ags.push(ag({ artifacts, inventory: artifacts.map((n) => inv(n, `${newDigest}-${n}`)) }));
  return { ags, easVersions };
}

describe('decideHeal: properties', () => {
  it("never heals any mix of an honest build's AG and ExternalArtifact versions (cache lag, reordering)", () => {
    fc.assert(
      fc.property(names, fc.nat(), fc.nat(), (artifacts, ai, ei) => {
        const { ags, easVersions } = honestBuild(artifacts, 'sha256:old', 'sha256:new');
        const a = ags[ai % ags.length]!;
        const eas = easVersions[ei % easVersions.length]!;
        expect(decideHeal(a, eas).kind).toBe('leave');
      }),
      { numRuns: 2000 },
    );
  });

  it("a foreign delete or change of a settled AG's ExternalArtifact heals, and once bumped it is left", () => {
    fc.assert(
      fc.property(
        names,
        fc.nat(),
        fc.boolean(),
        fc.constantFrom('kubectl-patch', 'kubectl-edit', 'none'),
        (artifacts, pick, del, owner) => {
          const settled = ag({ artifacts, inventory: artifacts.map((n) => inv(n, `d-${n}`)) });
          const victim = artifacts[pick % artifacts.length]!;
          const eas = artifacts.flatMap((n) =>
            n !== victim ? [ea(n, `d-${n}`)] : del ? [] : [ea(n, 'sha256:foreign', owner)],
          );
          const d = decideHeal(settled, eas);
          expect(d.kind).toBe('heal');
          if (d.kind !== 'heal') return;
          expect(d.bump).toBe(true);
          expect(d.recreate.map((r) => r.name)).toEqual(!del && owner !== 'none' ? [victim] : []);
          // After the bump (requestedAt not handled yet), nothing more: at most one bump per drift.
          const bumped = structuredClone(settled);
          bumped.metadata!.annotations = { 'reconcile.fluxcd.io/requestedAt': 'now' };
          const again = decideHeal(
            bumped,
            del || owner === 'none' ? eas : eas.filter((e) => e.metadata?.name !== victim),
          );
          expect(again).toEqual({ kind: 'leave', why: 'request-pending' });
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('in step means source-watcher sees no ExternalArtifact drift, whatever the order of the list', () => {
    fc.assert(
      fc.property(names, fc.nat(), (artifacts, seed) => {
        const a = ag({ artifacts, inventory: artifacts.map((n) => inv(n, `d-${n}`)) });
        const eas = artifacts.map((n) => ea(n, `d-${n}`));
        const rotated = [...eas.slice(seed % eas.length), ...eas.slice(0, seed % eas.length)];
        expect(matchesInventory(a, rotated)).toBe(true);
        expect(decideHeal(a, rotated)).toEqual(leave('in-step'));
      }),
    );
  });
});
