// The ValidatingAdmissionPolicies of knative/components/admission-policy (docs/adr/0055) on the
// real kube-apiserver, where the global setup installed them: for each function's ServiceAccount,
// a write that RBAC allows but the policy does not is refused with the policy's message and
// changes nothing, and the writes the function really makes (through the product's adapter, the
// same calls as functions/*/writes.ts) are admitted. The function suites show the rest: they pass
// with the policies in force.

import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOTATION_REQUESTED_AT,
  EA_API_VERSION,
  EA_KIND,
  LABEL_GENERATOR,
  SOURCE_WATCHER_MANAGER,
  claimAnnotations,
  clearTrackingPatch,
  markerConditions,
  requestedAtFor,
  type ArtifactGenerator,
  type ExternalArtifact,
} from '../../shared/core/index.js';
import type { PackageSource } from '../../shared/core/objects/types.js';
import { createKubeClient } from '../../shared/kube/client.js';
import { createExternalArtifactClient } from '../../shared/kube/external-artifact-client.js';
import { isKubeError } from '../../shared/kube/errors.js';
import { AG_RESOURCE as AG, EA_RESOURCE as EA } from '../harness/knative/index.js';
import { admissionPolicyObjects, POLICY_KIND } from '../setup/admission-policy.js';
import { createAgWithStatus, stuckStatus } from '../support/ag-states.js';
import {
  agRefOf,
  createPackageSource,
  getArtifactGenerator,
  getPackageSource,
  makePackageSource,
  MERGE_PATCH,
  testKubeConfig,
  uniqueName,
  writePackageSourceStatus,
} from '../support/apiserver.js';
import { readyWith, reconciling, succeeded } from '../support/conditions.js';
import { asFunction } from '../support/identities.js';
import { RECOVERY_NAMESPACE } from '../support/manifests.js';
import { systemClock } from '../../shared/runtime/clock.js';

const NS = 'cozy-system';
const T0 = Math.floor(Date.now() / 1000) * 1000;
const admin = testKubeConfig();
const raw = (kc: k8s.KubeConfig): k8s.CustomObjectsApi => kc.makeApiClient(k8s.CustomObjectsApi);
const PS = { group: 'cozystack.io', version: 'v1alpha1', plural: 'packagesources' };
const PING = { group: 'sources.knative.dev', version: 'v1', plural: 'pingsources' };

/** The refusal of `write`: HTTP 403 from the named policy, with `message` in it. */
async function expectRefused(
  write: Promise<unknown>,
  policy: string,
  message: string | RegExp,
): Promise<void> {
  const err = await write.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, 'the write was admitted').toBeInstanceOf(k8s.ApiException);
  const e = err as k8s.ApiException<unknown>;
  const body = typeof e.body === 'string' ? e.body : JSON.stringify(e.body);
  expect(e.code, body).toBe(403);
  expect(body).toContain(`ValidatingAdmissionPolicy '${policy}'`);
  expect(body).toMatch(message);
}

const asSa = (name: string): k8s.KubeConfig => asFunction(admin, name);
const stuckAg = (): Promise<ArtifactGenerator> =>
  createAgWithStatus(admin, stuckStatus(T0), { namespace: NS, annotations: { keep: 'me' } });

describe('the shipped policies on the API server', () => {
  it('are all installed, each with its binding', async () => {
    const api = admin.makeApiClient(k8s.AdmissionregistrationV1Api);
    const shipped = admissionPolicyObjects().filter((o) => o.kind === POLICY_KIND);
    expect(shipped.map((p) => p.metadata.name).sort()).toEqual([
      // recovery-config's values (docs/adr/0064, integration/config-policy.test.ts).
      'source-watcher-recovery-config',
      'source-watcher-recovery-detect',
      'source-watcher-recovery-force-drift',
      'source-watcher-recovery-heal-external-artifacts',
      'source-watcher-recovery-surface-stalled',
    ]);
    const bindings = (await api.listValidatingAdmissionPolicyBinding()).items;
    for (const p of shipped) {
      const live = await api.readValidatingAdmissionPolicy({ name: p.metadata.name });
      expect(live.spec?.failurePolicy, p.metadata.name).toBe('Fail');
      const bound = bindings.filter((b) => b.spec?.policyName === p.metadata.name);
      expect(
        bound.map((b) => b.spec?.validationActions),
        p.metadata.name,
      ).toEqual([['Deny']]);
    }
  });

  it('the API server refuses a policy whose CEL does not compile (create validates it)', async () => {
    const api = admin.makeApiClient(k8s.AdmissionregistrationV1Api);
    const [first] = admissionPolicyObjects().filter((o) => o.kind === POLICY_KIND);
    const broken = JSON.parse(JSON.stringify(first)) as k8s.V1ValidatingAdmissionPolicy;
    broken.metadata = { name: uniqueName('broken-policy') };
    broken.spec!.validations = [{ expression: 'object.metadata.name ==', message: 'x' }];
    const err = await api.createValidatingAdmissionPolicy({ body: broken }).then(
      () => undefined,
      (e: unknown) => e as k8s.ApiException<unknown>,
    );
    expect(err?.code).toBe(422);
    expect(String(err?.body)).toMatch(/compilation failed|Syntax error/);
  });
});

describe('force-drift', () => {
  const policy = 'source-watcher-recovery-force-drift';
  const api = raw(asSa('force-drift'));
  const patch = (ag: ArtifactGenerator, body: unknown, status = false) => {
    const args = { ...AG, namespace: NS, name: ag.metadata?.name ?? '', body };
    return status
      ? api.patchNamespacedCustomObjectStatus(args, MERGE_PATCH)
      : api.patchNamespacedCustomObject(args, MERGE_PATCH);
  };

  it('may not change the spec, another annotation, a label or an owner reference', async () => {
    const ag = await stuckAg();
    await expectRefused(
      patch(ag, {
        spec: { artifacts: [{ name: 'x', copy: [{ from: '@src/**', to: '@artifact/' }] }] },
      }),
      policy,
      /may not change an ArtifactGenerator's spec/,
    );
    await expectRefused(
      patch(ag, { metadata: { annotations: { keep: 'changed', other: 'x' } } }),
      policy,
      /not: keep, other|not: other, keep/,
    );
    await expectRefused(
      patch(ag, { metadata: { annotations: { keep: null } } }),
      policy,
      /not: keep/,
    );
    await expectRefused(patch(ag, { metadata: { labels: { a: 'b' } } }), policy, /labels/);
    await expectRefused(
      patch(ag, {
        metadata: {
          ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'u' }],
        },
      }),
      policy,
      /owner references/,
    );
    // Nothing changed.
    const now = await getArtifactGenerator(agRefOf(ag), admin);
    expect(now.metadata?.resourceVersion).toBe(ag.metadata?.resourceVersion);
  });

  it('may not write any status but its marker, nor change another condition', async () => {
    const ag = await stuckAg();
    const conditions = ag.status?.conditions ?? [];
    await expectRefused(
      patch(ag, { status: { conditions: [reconciling(T0), succeeded(T0)] } }, true),
      policy,
      /only to its marker/,
    );
    await expectRefused(
      patch(
        ag,
        { status: { conditions: markerConditions(ag, T0).filter((c) => c.type === 'Ready') } },
        true,
      ),
      policy,
      /only the Ready condition/,
    );
    await expectRefused(
      patch(ag, { status: { observedSourcesDigest: 'sha256:0', conditions } }, true),
      policy,
      /only the conditions/,
    );
    const now = await getArtifactGenerator(agRefOf(ag), admin);
    expect(now.metadata?.resourceVersion).toBe(ag.metadata?.resourceVersion);
  });

  it('makes its real writes: claim, marker, requestedAt, clear-tracking (admitted)', async () => {
    const ag = await stuckAg();
    const kube = createKubeClient({
      clock: systemClock,
      kubeConfig: asSa('force-drift'),
      fieldManager: 'force-drift',
    });
    const ref = agRefOf(ag);
    const rv = ag.metadata?.resourceVersion ?? '';
    const claimed = await kube.patchArtifactGeneratorAnnotations(ref, claimAnnotations(1, T0), {
      resourceVersion: rv,
    });
    const marked = await kube.patchArtifactGeneratorConditions(ref, markerConditions(claimed, T0), {
      resourceVersion: claimed.metadata?.resourceVersion ?? '',
    });
    await kube.patchArtifactGeneratorAnnotations(ref, {
      [ANNOTATION_REQUESTED_AT]: requestedAtFor(T0),
    });
    await kube.patchArtifactGeneratorAnnotations(ref, clearTrackingPatch());
    const now = await getArtifactGenerator(ref, admin);
    expect(now.metadata?.annotations).toEqual({
      keep: 'me',
      [ANNOTATION_REQUESTED_AT]: requestedAtFor(T0),
    });
    expect(now.status?.conditions).toEqual(marked.status?.conditions);
    expect(now.status?.conditions?.find((c) => c.type === 'Ready')?.reason).toBe(
      'SourceWatcherRecoveryForced',
    );
  });

  it('the adapter maps a refusal to a Forbidden error', async () => {
    const ag = await stuckAg();
    const kube = createKubeClient({
      clock: systemClock,
      kubeConfig: asSa('force-drift'),
      fieldManager: 'force-drift',
    });
    const err = await kube.patchArtifactGeneratorAnnotations(agRefOf(ag), { other: 'x' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isKubeError(err, 'Forbidden')).toBe(true);
  });
});

describe('heal-external-artifacts', () => {
  const policy = 'source-watcher-recovery-heal-external-artifacts';

  async function createEa(labels: Record<string, string>): Promise<ExternalArtifact> {
    const name = uniqueName('ea');
    return (await raw(admin).createNamespacedCustomObject({
      ...EA,
      namespace: NS,
      body: {
        apiVersion: EA_API_VERSION,
        kind: EA_KIND,
        metadata: { name, namespace: NS, labels },
        spec: {
          sourceRef: {
            apiVersion: 'source.extensions.fluxcd.io/v1beta1',
            kind: 'ArtifactGenerator',
            name,
            namespace: NS,
          },
        },
      },
    })) as ExternalArtifact;
  }
  const readEa = (ea: ExternalArtifact) =>
    raw(admin)
      .getNamespacedCustomObject({ ...EA, namespace: NS, name: ea.metadata?.name ?? '' })
      .then(
        () => 'present',
        (e: unknown) => (e instanceof k8s.ApiException && e.code === 404 ? 'gone' : String(e)),
      );
  const eas = () =>
    createExternalArtifactClient({
      clock: systemClock,
      kubeConfig: asSa('heal-external-artifacts'),
    });
  const deleteAs = (ea: ExternalArtifact) =>
    raw(asSa('heal-external-artifacts')).deleteNamespacedCustomObject({
      ...EA,
      namespace: NS,
      name: ea.metadata?.name ?? '',
    });

  it('may not delete an ExternalArtifact without source-watcher labels', async () => {
    const unlabelled = await createEa({});
    const generatorOnly = await createEa({ [LABEL_GENERATOR]: 'some-uid' });
    const otherManager = await createEa({
      [LABEL_GENERATOR]: 'some-uid',
      'app.kubernetes.io/managed-by': 'someone-else',
    });
    for (const ea of [unlabelled, generatorOnly, otherManager]) {
      await expectRefused(
        deleteAs(ea),
        policy,
        /only ExternalArtifacts that source-watcher generated/,
      );
      expect(await readEa(ea)).toBe('present');
    }
  });

  it('deletes one source-watcher generated, with its preconditions (admitted)', async () => {
    const ea = await createEa({
      [LABEL_GENERATOR]: 'some-uid',
      'app.kubernetes.io/managed-by': SOURCE_WATCHER_MANAGER,
    });
    await eas().deleteExternalArtifact(
      { namespace: NS, name: ea.metadata?.name ?? '' },
      { uid: ea.metadata?.uid ?? '', resourceVersion: ea.metadata?.resourceVersion ?? '' },
    );
    expect(await readEa(ea)).toBe('gone');
  });

  it('may change only requestedAt on an AG', async () => {
    const ag = await stuckAg();
    const kube = createKubeClient({
      clock: systemClock,
      kubeConfig: asSa('heal-external-artifacts'),
      fieldManager: 'heal-external-artifacts',
    });
    const ref = agRefOf(ag);
    const err = await kube.patchArtifactGeneratorAnnotations(ref, claimAnnotations(1, T0)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isKubeError(err, 'Forbidden')).toBe(true);
    await expectRefused(
      raw(asSa('heal-external-artifacts')).patchNamespacedCustomObject(
        {
          ...AG,
          namespace: NS,
          name: ref.name,
          body: { spec: { sources: [{ alias: 'src', kind: 'OCIRepository', name: 'other' }] } },
        },
        MERGE_PATCH,
      ),
      policy,
      /only the reconcile.fluxcd.io\/requestedAt annotation/,
    );
    await kube.patchArtifactGeneratorAnnotations(
      ref,
      { [ANNOTATION_REQUESTED_AT]: requestedAtFor(T0) },
      { resourceVersion: ag.metadata?.resourceVersion ?? '' },
    );
    const now = await getArtifactGenerator(ref, admin);
    expect(now.metadata?.annotations).toEqual({
      keep: 'me',
      [ANNOTATION_REQUESTED_AT]: requestedAtFor(T0),
    });
  });
});

describe('surface-stalled', () => {
  const policy = 'source-watcher-recovery-surface-stalled';
  const api = raw(asSa('surface-stalled'));

  async function packageSource(): Promise<PackageSource> {
    const ps = await createPackageSource(makePackageSource(), admin);
    return writePackageSourceStatus(
      ps.metadata?.name ?? '',
      { conditions: [reconciling(T0), succeeded(T0)] },
      admin,
    );
  }
  const patchStatus = (ps: PackageSource, body: unknown) =>
    api.patchClusterCustomObjectStatus({ ...PS, name: ps.metadata?.name ?? '', body }, MERGE_PATCH);

  it('may not change another condition or another status field', async () => {
    const ps = await packageSource();
    await expectRefused(
      patchStatus(ps, { status: { conditions: [succeeded(T0)] } }),
      policy,
      /only the Ready condition/,
    );
    await expectRefused(
      patchStatus(ps, {
        status: { conditions: [{ ...reconciling(T0), status: 'False' }, succeeded(T0)] },
      }),
      policy,
      /only the Ready condition/,
    );
    await expectRefused(
      patchStatus(ps, { status: { variants: 'default,other' } }),
      policy,
      /only the Ready condition/,
    );
    const now = await getPackageSource(ps.metadata?.name ?? '', admin);
    expect(now.metadata?.resourceVersion).toBe(ps.metadata?.resourceVersion);
  });

  it('may not write the object itself (RBAC refuses it first)', async () => {
    const ps = await packageSource();
    const err = await api
      .patchClusterCustomObject(
        { ...PS, name: ps.metadata?.name ?? '', body: { spec: { sourceRef: null } } },
        MERGE_PATCH,
      )
      .then(
        () => undefined,
        (e: unknown) => e as k8s.ApiException<unknown>,
      );
    expect(err?.code).toBe(403);
  });

  it('writes Ready, every other condition as read (admitted)', async () => {
    const ps = await packageSource();
    const kube = createKubeClient({
      clock: systemClock,
      kubeConfig: asSa('surface-stalled'),
      fieldManager: 'surface-stalled',
    });
    const stalled = readyWith('False', 'SourceWatcherStalled', T0 + 1000);
    await kube.patchPackageSourceConditions(ps.metadata?.name ?? '', [reconciling(T0), stalled], {
      resourceVersion: ps.metadata?.resourceVersion ?? '',
    });
    const now = await getPackageSource(ps.metadata?.name ?? '', admin);
    expect(now.status?.conditions).toEqual([reconciling(T0), stalled]);
  });
});

describe('detect', () => {
  const policy = 'source-watcher-recovery-detect';
  const api = raw(asSa('detect'));
  const pingSource = (name: string, sink: unknown) => ({
    apiVersion: 'sources.knative.dev/v1',
    kind: 'PingSource',
    metadata: { name, namespace: RECOVERY_NAMESPACE },
    spec: { schedule: '0 0 1 1 *', sink },
  });
  const broker = {
    ref: {
      apiVersion: 'eventing.knative.dev/v1',
      kind: 'Broker',
      name: 'default',
      namespace: RECOVERY_NAMESPACE,
    },
  };

  it('may not create a PingSource but its alarm (RBAC cannot limit create by name)', async () => {
    const name = uniqueName('not-the-alarm');
    await expectRefused(
      api.createNamespacedCustomObject({
        ...PING,
        namespace: RECOVERY_NAMESPACE,
        body: pingSource(name, broker),
      }),
      policy,
      /only its alarm PingSource source-watcher-recovery\/recovery-alarm/,
    );
    const read = await raw(admin)
      .getNamespacedCustomObject({ ...PING, namespace: RECOVERY_NAMESPACE, name })
      .then(
        () => 200,
        (e: unknown) => (e as k8s.ApiException<unknown>).code,
      );
    expect(read).toBe(404);
  });

  it('may not point the alarm anywhere but its Broker', async () => {
    for (const sink of [
      { uri: 'http://elsewhere.invalid/' },
      { ref: { ...broker.ref, name: 'another-broker' } },
      { ref: { apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: 'default' } },
    ]) {
      await expectRefused(
        api.createNamespacedCustomObject({
          ...PING,
          namespace: RECOVERY_NAMESPACE,
          body: pingSource('recovery-alarm', sink),
          dryRun: 'All',
        }),
        policy,
        /only at the Broker source-watcher-recovery\/default/,
      );
    }
  });
  // The alarm's owner (docs/adr/0067, 0068): only the resync PingSource, as detect writes it.
  describe('the alarm owner', () => {
    const RESYNC = 'resync';
    const asAdmin = raw(admin);
    const ownerRef = (over: Record<string, unknown> = {}) => ({
      apiVersion: 'sources.knative.dev/v1',
      kind: 'PingSource',
      name: RESYNC,
      uid: resyncUid,
      ...over,
    });
    const withOwners = (ownerReferences: unknown[]) => {
      const body = pingSource('recovery-alarm', broker);
      return { ...body, metadata: { ...body.metadata, ownerReferences } };
    };
    let resyncUid = '';
    beforeAll(async () => {
      await deleteAlarmAndResync();
      const created = (await asAdmin.createNamespacedCustomObject({
        ...PING,
        namespace: RECOVERY_NAMESPACE,
        body: pingSource(RESYNC, broker),
      })) as { metadata: { uid: string } };
      resyncUid = created.metadata.uid;
    });
    afterAll(deleteAlarmAndResync);
    async function deleteAlarmAndResync(): Promise<void> {
      for (const name of ['recovery-alarm', RESYNC]) {
        await asAdmin
          .deleteNamespacedCustomObject({ ...PING, namespace: RECOVERY_NAMESPACE, name })
          .catch((e: unknown) => {
            if ((e as k8s.ApiException<unknown>).code !== 404) throw e;
          });
      }
    }

    it.each([
      ['a ConfigMap', [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'u-1' }]],
      ['another PingSource', [() => ownerRef({ name: 'not-resync' })]],
      ['another apiVersion', [() => ownerRef({ apiVersion: 'sources.knative.dev/v1beta2' })]],
      ['the resync as controller', [() => ownerRef({ controller: true })]],
      ['the resync blocking its deletion', [() => ownerRef({ blockOwnerDeletion: true })]],
      [
        'the resync and a second owner',
        [
          () => ownerRef(),
          { apiVersion: 'v1', kind: 'Namespace', name: 'kube-system', uid: 'u-2' },
        ],
      ],
    ])('refuses an alarm owned by %s, on create', async (_what, refs) => {
      const owners = refs.map((r) => (typeof r === 'function' ? r() : r));
      await expectRefused(
        api.createNamespacedCustomObject({
          ...PING,
          namespace: RECOVERY_NAMESPACE,
          body: withOwners(owners),
          dryRun: 'All',
        }),
        policy,
        /no owner but the PingSource source-watcher-recovery\/resync/,
      );
    });

    it('admits the real owner (the resync PingSource by its uid) on create, and adoption on update', async () => {
      const created = (await api.createNamespacedCustomObject({
        ...PING,
        namespace: RECOVERY_NAMESPACE,
        body: withOwners([ownerRef()]),
        dryRun: 'All',
      })) as { metadata: { ownerReferences: unknown[] } };
      expect(created.metadata.ownerReferences).toEqual([ownerRef()]);

      // An alarm written without an owner (its owner was unreadable) is adopted by a later patch;
      // a forged owner added to it is refused, and the refused write changes nothing.
      await api.createNamespacedCustomObject({
        ...PING,
        namespace: RECOVERY_NAMESPACE,
        body: pingSource('recovery-alarm', broker),
      });
      const patch = (ownerReferences: unknown[]) =>
        api.patchNamespacedCustomObject(
          {
            ...PING,
            namespace: RECOVERY_NAMESPACE,
            name: 'recovery-alarm',
            body: { metadata: { ownerReferences } },
          },
          MERGE_PATCH,
        );
      await expectRefused(
        patch([{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'u-3' }]),
        policy,
        /no owner but the PingSource/,
      );
      const before = (await asAdmin.getNamespacedCustomObject({
        ...PING,
        namespace: RECOVERY_NAMESPACE,
        name: 'recovery-alarm',
      })) as { metadata: { ownerReferences?: unknown[] } };
      expect(before.metadata.ownerReferences).toBeUndefined();
      const adopted = (await patch([ownerRef()])) as { metadata: { ownerReferences: unknown[] } };
      expect(adopted.metadata.ownerReferences).toEqual([ownerRef()]);
    });
  });
});
