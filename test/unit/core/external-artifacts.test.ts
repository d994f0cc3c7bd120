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
  LABEL_MANAGED_BY,
  statusConflictOf,
  isPaused,
  recreateIdentityFor,
  externalArtifactNamespaces,
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

/** source-watcher's apply of the object (reconcileExternalArtifact): labels and spec.sourceRef. */
const appliedBy = (manager: string) => ({
  manager,
  operation: 'Apply',
  fieldsType: 'FieldsV1',
  fieldsV1: { 'f:metadata': { 'f:labels': {} }, 'f:spec': { 'f:sourceRef': {} } },
});

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
  extra: Partial<{
    uid: string;
    rv: string;
    managedBy: string | null;
    sourceRefName: string;
    namespace: string;
  }> = {},
): ExternalArtifact {
  const managedBy = extra.managedBy === undefined ? 'source-watcher' : extra.managedBy;
  return {
    apiVersion: 'source.toolkit.fluxcd.io/v1',
    kind: 'ExternalArtifact',
    metadata: {
      namespace: extra.namespace ?? NS,
      name,
      uid: extra.uid ?? `uid-${name}`,
      resourceVersion: extra.rv ?? '100',
      labels: {
        [LABEL_GENERATOR]: UID,
        ...(managedBy !== null ? { [LABEL_MANAGED_BY]: managedBy } : {}),
      },
      managedFields: owner === 'none' ? [] : [appliedBy('source-watcher'), ownedBy(owner)],
    },
    spec: {
      sourceRef: {
        apiVersion: 'source.extensions.fluxcd.io/v1beta1',
        kind: 'ArtifactGenerator',
        name: extra.sourceRefName ?? 'ag',
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
    message: string;
    spec: Record<string, unknown>;
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
    spec: {
      artifacts: (over.artifacts ?? ['a', 'b']).map((name) => ({ name })),
      ...over.spec,
    },
    status: {
      conditions:
        ready === 'none'
          ? []
          : [
              {
                ...readyWith(
                  ready,
                  over.reason ?? (ready === 'True' ? 'Succeeded' : 'Progressing'),
                  Date.UTC(2026, 11, 1, 10),
                  over.observedGeneration ?? generation,
                ),
                ...(over.message !== undefined ? { message: over.message } : {}),
              },
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
  manager: 'source-watcher',
});
const heal = (drift: EaDrift[], recreate: RecreateTarget[] = [], bump = true): HealDecision => ({
  kind: 'heal',
  drift,
  recreate,
  bump,
});
const pending = { 'reconcile.fluxcd.io/requestedAt': 't2' };
/** Ready as source-watcher writes it when the status apply of `name` conflicts (real 409 text). */
const conflictOn = (name: string) => ({
  ready: 'False' as const,
  reason: 'ReconciliationFailed',
  message:
    `${name} reconcile failed: failed to patchStatus ExternalArtifact status: Apply failed with ` +
    '1 conflict: conflict with "kubectl-patch" with subresource "status" using ' +
    'source.toolkit.fluxcd.io/v1: .status.artifact.digest',
});
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
      ag({ ...conflictOn('a'), annotations: handled, lastHandled: 't1' }),
      [ea('a', 'sha256:evil', 'kubectl-patch', { uid: 'u-a', rv: '9' }), ea('b', 'sha256:b1')],
      heal([changed('a')], [recreateA('kubectl-patch', '9')]),
    ],
    [
      'failed by the conflict, the object already deleted (the bump failed): the bump is finished',
      ag(conflictOn('a')),
      [ea('b', 'sha256:b1')],
      heal([missing('a')]),
    ],
    [
      'failed by the conflict on another artifact than the drifted one: left',
      ag(conflictOn('b')),
      [ea('a', 'sha256:evil', 'kubectl-patch', { uid: 'u-a', rv: '9' }), ea('b', 'sha256:b1')],
      leave('failed'),
    ],
    [
      'failed by another apply error (ReconciliationFailed, not the status conflict): left',
      ag({
        ready: 'False',
        reason: 'ReconciliationFailed',
        message:
          'a reconcile failed: failed to apply ExternalArtifact: etcdserver: request timed out',
      }),
      [ea('a', 'sha256:evil', 'kubectl-patch'), ea('b', 'sha256:b1')],
      leave('failed'),
    ],
    [
      'failed fetching its sources (SourceFetchFailed), a foreign-owned digest: left',
      ag({ ready: 'False', reason: 'SourceFetchFailed', message: 'get sources failed: x' }),
      [ea('a', 'sha256:evil', 'kubectl-patch'), ea('b', 'sha256:b1')],
      leave('failed'),
    ],
    [
      'failed on a pathPattern (BuildFailed, Stalled), an ExternalArtifact missing: left',
      ag({ ready: 'False', reason: 'BuildFailed', message: 'failed to expand path pattern: x' }),
      [ea('b', 'sha256:b1')],
      leave('failed'),
    ],
    [
      'paused (disabled), an ExternalArtifact pinned by an operator: left',
      ag({ annotations: { 'source.extensions.fluxcd.io/reconcile': 'disabled' } }),
      [ea('a', 'sha256:pinned', 'kubectl-patch'), ea('b', 'sha256:b1')],
      leave('paused'),
    ],
    [
      "paused (v2.3's Disabled), an ExternalArtifact deleted: left",
      ag({ annotations: { 'source.extensions.fluxcd.io/reconcile': 'Disabled' } }),
      [ea('b', 'sha256:b1')],
      leave('paused'),
    ],
    [
      'pathPattern: a generated name (not a declared template) deleted: bump',
      ag({
        artifacts: ['{app}'],
        spec: { pathPattern: '@src/apps/{app}' },
        inventory: [inv('app-x', 'sha256:x1'), inv('app-y', 'sha256:y1')],
      }),
      [ea('app-y', 'sha256:y1')],
      heal([missing('app-x')]),
    ],
    [
      'pathPattern: a generated name with a foreign-owned digest: recreate and bump',
      ag({
        artifacts: ['{app}'],
        spec: { pathPattern: '@src/apps/{app}' },
        inventory: [inv('a', 'sha256:a1')],
      }),
      [ea('a', 'sha256:evil', 'kubectl-patch', { uid: 'u-a', rv: '3' })],
      heal([changed('a')], [recreateA('kubectl-patch', '3')]),
    ],
    [
      'a foreign digest on an object whose managed-by label is missing: not ours, left',
      ag(),
      [ea('a', 'sha256:evil', 'kubectl-patch', { managedBy: null }), ea('b', 'sha256:b1')],
      leave('not-ours'),
    ],
    [
      'a foreign digest on an object managed by another controller (not the applier): left',
      ag(),
      [ea('a', 'sha256:evil', 'kubectl-patch', { managedBy: 'helm' }), ea('b', 'sha256:b1')],
      leave('not-ours'),
    ],
    [
      'a foreign digest on an object whose sourceRef names another AG: left',
      ag(),
      [ea('a', 'sha256:evil', 'kubectl-patch', { sourceRefName: 'other' }), ea('b', 'sha256:b1')],
      leave('not-ours'),
    ],
    [
      'an object of another AG (another uid) in the list does not count',
      ag(),
      [...inStep, { ...ea('c', 'sha256:c1'), metadata: { ...ea('c', 'x').metadata, labels: {} } }],
      leave('in-step'),
    ],
    [
      'v2.3: the inventory also lists a managed Namespace, skipped',
      ag({
        inventory: [
          inv('a', 'sha256:a1'),
          inv('b', 'sha256:b1'),
          { kind: 'Namespace', name: 'apps', digest: 'd' } as InventoryEntry,
        ],
      }),
      inStep,
      leave('in-step'),
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

describe('the rules read from source-watcher (ADR 54)', () => {
  it.each<[string, string | undefined, boolean]>([
    ['disabled', 'disabled', true],
    ["v2.3's Disabled", 'Disabled', true],
    ['DISABLED', 'DISABLED', true],
    ['enabled', 'enabled', false],
    ['absent', undefined, false],
    ['disabled with a space', 'disabled ', false],
  ])('pause annotation %s', (_n, value, paused) => {
    const a = ag(
      value === undefined
        ? {}
        : { annotations: { 'source.extensions.fluxcd.io/reconcile': value } },
    );
    expect(isPaused(a)).toBe(paused);
  });

  it.each<[string, Partial<Parameters<typeof ag>[0]>, string | null]>([
    ['the status-apply conflict', conflictOn('app-x'), 'app-x'],
    ['Ready True', {}, null],
    [
      'another reason',
      { ready: 'False', reason: 'BuildFailed', message: conflictOn('a').message },
      null,
    ],
    [
      'the object apply failed (not its status)',
      {
        ready: 'False',
        reason: 'ReconciliationFailed',
        message:
          'a reconcile failed: failed to apply ExternalArtifact: Apply failed with 1 conflict',
      },
      null,
    ],
    [
      'the status apply failed otherwise (a timeout)',
      {
        ready: 'False',
        reason: 'ReconciliationFailed',
        message: 'a reconcile failed: failed to patchStatus ExternalArtifact status: etcdserver: x',
      },
      null,
    ],
    [
      'a name that is no object name',
      {
        ready: 'False',
        reason: 'ReconciliationFailed',
        message: conflictOn('a').message.replace(/^a /, 'Not_A_Name '),
      },
      null,
    ],
  ])('statusConflictOf: %s', (_n, over, want) => {
    expect(statusConflictOf(ag(over))).toBe(want);
  });

  it('lists in the AG namespace and the namespaces its inventory names, each once', () => {
    const a = ag({
      inventory: [
        inv('a', 'd'),
        { name: 'b', namespace: 'apps', digest: 'd', filename: 'b' },
        { name: 'c', namespace: 'apps', digest: 'd', filename: 'c' },
        { name: 'd', namespace: 'Bad_NS', digest: 'd', filename: 'd' },
        { kind: 'Namespace', name: 'apps2', digest: 'd' } as InventoryEntry,
      ],
    });
    expect(externalArtifactNamespaces(a)).toEqual([NS, 'apps']);
  });

  it.each<[string, Record<string, unknown>, string, unknown]>([
    ['own namespace, no serviceAccountName: the controller', {}, NS, { kind: 'controller' }],
    ['another namespace, no serviceAccountName: unknown', {}, 'apps', { kind: 'unknown' }],
    [
      'serviceAccountName: that ServiceAccount, in any namespace',
      { serviceAccountName: 'builder' },
      NS,
      { kind: 'service-account', namespace: NS, name: 'builder' },
    ],
    [
      'serviceAccountName, another namespace',
      { serviceAccountName: 'builder' },
      'apps',
      { kind: 'service-account', namespace: NS, name: 'builder' },
    ],
    [
      'a malformed serviceAccountName: unknown',
      { serviceAccountName: 'Bad_SA' },
      NS,
      { kind: 'unknown' },
    ],
  ])('recreateIdentityFor: %s', (_n, spec, ns, want) => {
    expect(recreateIdentityFor(ag({ spec }), ns)).toEqual(want);
  });

  it('a cross-namespace target (v2.3 spec.artifacts[].namespace) is healed like any other', () => {
    const a = ag({
      artifacts: ['a'],
      spec: { artifacts: [{ name: 'a', namespace: 'apps' }] },
      inventory: [{ name: 'a', namespace: 'apps', digest: 'sha256:a1', filename: 'a' }],
    });
    const e = ea('a', 'sha256:evil', 'kubectl-patch', { uid: 'u-a', rv: '5', namespace: 'apps' });
    expect(decideHeal(a, [e])).toEqual(
      heal(
        [{ kind: 'digest', namespace: 'apps', name: 'a' }],
        [{ ...recreateA('kubectl-patch', '5'), namespace: 'apps' }],
      ),
    );
    expect(decideHeal(a, [])).toEqual(heal([{ kind: 'missing', namespace: 'apps', name: 'a' }]));
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

  it('a paused AG, or one failed for anything but the status-apply conflict, never heals, whatever its ExternalArtifacts', () => {
    const blocked = fc.oneof(
      fc
        .constantFrom('disabled', 'Disabled', 'DISABLED', 'dIsAbLeD')
        .map((v) => ({ annotations: { 'source.extensions.fluxcd.io/reconcile': v } })),
      fc
        .record({
          reason: fc.constantFrom('SourceFetchFailed', 'BuildFailed', 'ReconciliationFailed'),
          message: fc.oneof(
            fc.string(),
            fc.constant(
              'a reconcile failed: failed to apply ExternalArtifact: Apply failed with 1',
            ),
          ),
        })
        .map((r) => ({ ready: 'False' as const, ...r })),
    );
    fc.assert(
      fc.property(
        names,
        blocked,
        fc.array(
          fc.tuple(
            fc.constantFrom('a', 'b', 'c'),
            fc.constantFrom('kubectl-patch', 'source-watcher', 'none'),
          ),
        ),
        (artifacts, over, objects) => {
          const a = ag({ artifacts, inventory: artifacts.map((n) => inv(n, `d-${n}`)), ...over });
          const eas = objects.map(([n, owner]) => ea(n, 'sha256:other', owner));
          expect(decideHeal(a, eas).kind).toBe('leave');
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
