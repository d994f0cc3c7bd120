// heal-external-artifacts acts only when source-watcher will rebuild, and only on its own objects
// (issue 32, docs/adr/0054), over real HTTP against the real kube-apiserver, the function as its
// own ServiceAccount and the tenant as `tenantKubeConfig(namespace)` (RBAC enforced): a paused AG
// with a pinned ExternalArtifact, an AG failed for another reason than the status-apply conflict
// (and one failed by it, with the API server's own conflict message), a pathPattern AG whose bump
// failed after the delete, a forged update event, and targets whose managed-by label or sourceRef
// name something else.

import { PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import * as k8s from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOTATION_REQUESTED_AT,
  APISERVER_DELETE,
  APISERVER_UPDATE,
  EA_KIND,
  LABEL_GENERATOR,
  LABEL_MANAGED_BY,
  formatTimeNano,
  type ArtifactGenerator,
  type ExternalArtifact,
} from '../../../shared/core/index.js';
import { readyWith, succeeded } from '../../support/conditions.js';
import {
  agRefOf,
  customObjects,
  getArtifactGenerator,
  MERGE_PATCH,
  testKubeConfig,
  uniqueName,
  writeArtifactGeneratorStatus,
} from '../../support/apiserver.js';
import { SettableClock } from '../../harness/functions.js';
import { AG_RESOURCE as AG, EA_RESOURCE as EA } from '../../harness/knative/index.js';
import type { CloudEvent } from 'cloudevents';
import { cloudEvent, postEvent, type Started } from '../../support/http-events.js';
import { functionSuite } from '../../support/function-suite.js';
import { listEventsAbout } from '../../support/kube-events.js';
import { ensureNewerAgFields } from '../../support/newer-ag-crd.js';
import { TENANT_NAME, tenantKubeConfig } from '../../support/tenant-identity.js';

const NS = 'heal-trust';
const T0 = Math.floor(Date.now() / 1000) * 1000;
/** The function's calls carry its name as client tag (functionSuite). */
const TAG = 'heal-external-artifacts';
const apply = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
const kc = testKubeConfig();
const admin = customObjects(kc);
const WRITES = ['create', 'update', 'patch', 'delete'];
const suite = functionSuite('heal-external-artifacts-trust', kc);
let tenant: ReturnType<typeof customObjects>;

beforeAll(async () => {
  const tkc: KubeConfig = await tenantKubeConfig(NS);
  tenant = customObjects(tkc);
});

const digestOf = (n: number): string => `sha256:${String(n).repeat(64).slice(0, 64)}`;
const startHeal = (): Promise<Started> => suite.startHeal(new SettableClock(T0 + 60_000));

/** An AG created by the tenant (its spec as given), its status as source-watcher writes it. */
async function settledAg(
  spec: Record<string, unknown> | undefined,
  artifacts: string[],
  annotations?: Record<string, string>,
): Promise<ArtifactGenerator> {
  const name = uniqueName('ag');
  const created = (await tenant.createNamespacedCustomObject({
    ...AG,
    namespace: NS,
    body: {
      apiVersion: 'source.extensions.fluxcd.io/v1beta1',
      kind: 'ArtifactGenerator',
      metadata: { name, namespace: NS, ...(annotations ? { annotations } : {}) },
      spec: spec ?? {
        sources: [{ alias: 'src', kind: 'OCIRepository', name }],
        artifacts: artifacts.map((a) => ({
          name: a,
          copy: [{ from: '@src/**', to: '@artifact/' }],
        })),
      },
    },
  })) as ArtifactGenerator;
  return writeArtifactGeneratorStatus(
    agRefOf(created),
    {
      conditions: [succeeded(T0, 1, artifacts.length)],
      observedSourcesDigest: digestOf(9),
      inventory: artifacts.map((a) => ({
        name: a,
        namespace: NS,
        digest: digestOf(1),
        filename: `${a}.tar.gz`,
      })),
    },
    kc,
  );
}

/** source-watcher's server-side apply of `name` and its status (reconcileExternalArtifact). */
async function applyAsSourceWatcher(
  ag: ArtifactGenerator,
  name: string,
  digest: string,
): Promise<ExternalArtifact> {
  const base = { ...EA, namespace: NS, name, fieldManager: 'source-watcher' };
  const meta = { name, namespace: NS };
  await admin.patchNamespacedCustomObject(
    {
      ...base,
      force: true,
      body: {
        apiVersion: 'source.toolkit.fluxcd.io/v1',
        kind: EA_KIND,
        metadata: {
          ...meta,
          labels: {
            [LABEL_MANAGED_BY]: 'source-watcher',
            [LABEL_GENERATOR]: ag.metadata?.uid ?? '',
          },
        },
        spec: {
          sourceRef: {
            apiVersion: 'source.extensions.fluxcd.io/v1beta1',
            kind: 'ArtifactGenerator',
            name: ag.metadata?.name ?? '',
            namespace: NS,
          },
        },
      },
    },
    apply,
  );
  return (await admin.patchNamespacedCustomObjectStatus(
    { ...base, force: false, body: statusBody(name, digest) },
    apply,
  )) as ExternalArtifact;
}

function statusBody(name: string, digest: string) {
  return {
    apiVersion: 'source.toolkit.fluxcd.io/v1',
    kind: EA_KIND,
    metadata: { name, namespace: NS },
    status: {
      artifact: {
        digest,
        revision: 'latest@sha256:1',
        path: `externalartifact/${NS}/${name}/a.tar.gz`,
        url: `http://source-watcher/${name}.tar.gz`,
        lastUpdateTime: '2026-12-01T10:00:00Z',
      },
    },
  };
}

/** The tenant's `kubectl patch --subresource status` of the digest (it then owns the field). */
async function pinDigest(name: string, digest: string): Promise<ExternalArtifact> {
  return (await tenant.patchNamespacedCustomObjectStatus(
    {
      ...EA,
      namespace: NS,
      name,
      fieldManager: 'kubectl-patch',
      body: { status: { artifact: { digest } } },
    },
    MERGE_PATCH,
  )) as ExternalArtifact;
}

const readEa = (name: string): Promise<ExternalArtifact | undefined> =>
  admin.getNamespacedCustomObject({ ...EA, namespace: NS, name }).then(
    (ea) => ea as ExternalArtifact,
    () => undefined,
  );

const requestedAtOf = async (ag: ArtifactGenerator): Promise<string | undefined> =>
  (await getArtifactGenerator(agRefOf(ag), kc)).metadata?.annotations?.[ANNOTATION_REQUESTED_AT];

function eaEvent(ea: ExternalArtifact, type = APISERVER_UPDATE): CloudEvent<unknown> {
  return cloudEvent({
    type,
    data: ea,
    extensions: {
      kind: EA_KIND,
      apiversion: 'source.toolkit.fluxcd.io/v1',
      name: ea.metadata?.name ?? '',
      namespace: ea.metadata?.namespace ?? NS,
    },
  });
}

async function expectAnswer(s: Started, event: CloudEvent<unknown>, result: string): Promise<void> {
  expect(await postEvent(s.url, event)).toMatchObject({ status: 200, body: { result } });
}

const mark = (): number => suite.proxy.calls.at(-1)?.seq ?? 0;
const writesSince = (since: number) =>
  suite.proxy
    .callsMatching({ clientTag: TAG })
    .filter(
      (c) =>
        c.seq > since &&
        c.resource !== 'events' &&
        c.resource !== 'subjectaccessreviews' &&
        WRITES.includes(c.verb),
    )
    .map((c) => `${c.verb} ${c.resource} ${c.status}`);

/** Ready=False as source-watcher writes it (observed on the AG's generation). */
async function failWith(ag: ArtifactGenerator, reason: string, message: string) {
  return writeArtifactGeneratorStatus(
    agRefOf(ag),
    { conditions: [readyWith('False', reason, T0, ag.metadata?.generation ?? 1, message)] },
    kc,
  );
}

describe('heal-external-artifacts: only when source-watcher will rebuild', () => {
  it.each(['disabled', 'Disabled'])(
    'a paused AG (reconcile: %s) with an ExternalArtifact the operator pinned: neither deleted nor bumped',
    async (value) => {
      const s = await startHeal();
      const name = uniqueName('ea');
      const ag = await settledAg(undefined, [name]);
      await applyAsSourceWatcher(ag, name, digestOf(1));
      // The operator pauses the AG and pins the ExternalArtifact (the tenant's own objects).
      await tenant.patchNamespacedCustomObject(
        {
          ...AG,
          namespace: NS,
          name: ag.metadata?.name ?? '',
          body: { metadata: { annotations: { 'source.extensions.fluxcd.io/reconcile': value } } },
        },
        MERGE_PATCH,
      );
      const pinned = await pinDigest(name, digestOf(7));
      const m = mark();
      await expectAnswer(s, eaEvent(pinned), 'paused');
      expect(writesSince(m)).toEqual([]);
      expect((await readEa(name))?.status?.artifact?.digest).toBe(digestOf(7));
      expect(await requestedAtOf(ag)).toBeUndefined();
      await admin.deleteNamespacedCustomObject({ ...EA, namespace: NS, name });
    },
  );

  it.each<[string, string, (name: string) => string]>([
    [
      'SourceFetchFailed',
      'SourceFetchFailed',
      () => "get sources failed: OCIRepository 'x/y' not found",
    ],
    ['a terminal pathPattern error', 'BuildFailed', () => 'failed to expand path pattern: invalid'],
    [
      'another apply error',
      'ReconciliationFailed',
      (n) =>
        `${n} reconcile failed: failed to apply ExternalArtifact: etcdserver: request timed out`,
    ],
  ])(
    'an AG failed for another reason (%s) with a foreign-owned digest: neither deleted nor bumped',
    async (_what, reason, message) => {
      const s = await startHeal();
      const name = uniqueName('ea');
      const ag = await settledAg(undefined, [name]);
      await applyAsSourceWatcher(ag, name, digestOf(1));
      await failWith(ag, reason, message(name));
      const pinned = await pinDigest(name, digestOf(7));
      const m = mark();
      await expectAnswer(s, eaEvent(pinned), 'failed');
      expect(writesSince(m)).toEqual([]);
      expect((await readEa(name))?.metadata?.uid).toBe(pinned.metadata?.uid);
      await admin.deleteNamespacedCustomObject({ ...EA, namespace: NS, name });
    },
  );

  it("an AG failed by the status-apply conflict (the API server's own 409 message): deleted, then bumped", async () => {
    const s = await startHeal();
    const name = uniqueName('ea');
    const ag = await settledAg(undefined, [name]);
    await applyAsSourceWatcher(ag, name, digestOf(1));
    const pinned = await pinDigest(name, digestOf(7));
    // source-watcher's status apply (no force) now conflicts: the message it puts in Ready.
    const conflict = await admin
      .patchNamespacedCustomObjectStatus(
        {
          ...EA,
          namespace: NS,
          name,
          fieldManager: 'source-watcher',
          force: false,
          body: statusBody(name, digestOf(2)),
        },
        apply,
      )
      .then(
        () => undefined,
        (e: unknown) =>
          e instanceof k8s.ApiException
            ? (JSON.parse(String(e.body)) as { message: string }).message
            : undefined,
      );
    expect(conflict).toMatch(/^Apply failed with 1 conflict: conflict with "kubectl-patch"/);
    await failWith(
      ag,
      'ReconciliationFailed',
      `${name} reconcile failed: failed to patchStatus ExternalArtifact status: ${conflict}`,
    );
    const m = mark();
    await expectAnswer(s, eaEvent(pinned), 'healed');
    expect(writesSince(m)).toEqual([
      'delete externalartifacts 200',
      'patch artifactgenerators 200',
    ]);
    expect(await readEa(name)).toBeUndefined();
  });
});

describe('heal-external-artifacts: the event is used only on the cached round', () => {
  it('a forged update (higher resourceVersion, another digest, no managedFields) bumps nothing', async () => {
    const s = await startHeal();
    const name = uniqueName('ea');
    const ag = await settledAg(undefined, [name]);
    const real = await applyAsSourceWatcher(ag, name, digestOf(1));
    const forged: ExternalArtifact = {
      ...real,
      metadata: { ...real.metadata, resourceVersion: '999999999' },
      status: { artifact: { ...real.status?.artifact, digest: digestOf(6) } },
    };
    delete forged.metadata?.managedFields;
    const m = mark();
    await expectAnswer(s, eaEvent(forged), 'in-step');
    expect(writesSince(m)).toEqual([]);
    expect(await requestedAtOf(ag)).toBeUndefined();
    expect((await readEa(name))?.metadata?.uid).toBe(real.metadata?.uid);
  });
});

describe('heal-external-artifacts: only its own objects', () => {
  it.each<[string, (name: string, agName: string) => Promise<unknown>]>([
    [
      'managed-by label names another controller',
      (name) =>
        tenant.patchNamespacedCustomObject(
          {
            ...EA,
            namespace: NS,
            name,
            body: { metadata: { labels: { [LABEL_MANAGED_BY]: 'helm' } } },
          },
          MERGE_PATCH,
        ),
    ],
    [
      'sourceRef names another AG',
      (name) =>
        tenant.patchNamespacedCustomObject(
          { ...EA, namespace: NS, name, body: { spec: { sourceRef: { name: 'another-ag' } } } },
          MERGE_PATCH,
        ),
    ],
  ])(
    'a target whose %s is not deleted, nor its AG bumped into the conflict',
    async (_what, reshape) => {
      const s = await startHeal();
      const [name, sibling] = [uniqueName('ea'), uniqueName('ea')];
      const ag = await settledAg(undefined, [sibling, name]);
      const inStep = await applyAsSourceWatcher(ag, sibling, digestOf(1));
      await applyAsSourceWatcher(ag, name, digestOf(1));
      await reshape(name, ag.metadata?.name ?? '');
      const pinned = await pinDigest(name, digestOf(7));
      const m = mark();
      // The sibling's event (it names the AG): the AG's list shows the reshaped object.
      await expectAnswer(s, eaEvent(inStep), 'not-ours');
      expect(writesSince(m)).toEqual([]);
      expect((await readEa(name))?.metadata?.uid).toBe(pinned.metadata?.uid);
      expect(await requestedAtOf(ag)).toBeUndefined();
      for (const n of [name, sibling]) {
        await admin.deleteNamespacedCustomObject({ ...EA, namespace: NS, name: n });
      }
    },
  );
});

function pathPatternSpec(name: string): Record<string, unknown> {
  return {
    sources: [{ alias: 'src', kind: 'OCIRepository', name }],
    pathPattern: '@src/apps/{app}',
    // The declared name is the template (here a placeholder the v2.1 schema accepts); the
    // generated names come from the sources, and only the inventory has them.
    artifacts: [{ name: 'tmpl', copy: [{ from: '@src/apps/{app}/**', to: '@artifact/' }] }],
  };
}
/** spec.pathPattern and spec.serviceAccountName kept by the API server (support/newer-ag-crd). */
const newerAgFields = (): Promise<void> => ensureNewerAgFields(kc, NS);

describe('heal-external-artifacts: v2.3 spec.serviceAccountName (re-created as that identity)', () => {
  beforeAll(newerAgFields);

  it.each<[string, string, string, string[]]>([
    [
      'may apply ExternalArtifacts there (the tenant)',
      TENANT_NAME,
      'healed',
      ['delete externalartifacts 200', 'patch artifactgenerators 200'],
    ],
    ['may not (no such RBAC)', 'nobody', 'cannot-recreate', []],
  ])(
    'a foreign-owned digest, the AG re-created as a ServiceAccount that %s',
    async (_what, sa, result, writes) => {
      const s = await startHeal();
      const name = uniqueName('ea');
      const src = uniqueName('src');
      const ag = await settledAg(
        {
          sources: [{ alias: 'src', kind: 'OCIRepository', name: src }],
          serviceAccountName: sa,
          artifacts: [{ name, copy: [{ from: '@src/**', to: '@artifact/' }] }],
        },
        [name],
      );
      await applyAsSourceWatcher(ag, name, digestOf(1));
      const pinned = await pinDigest(name, digestOf(7));
      const m = mark();
      await expectAnswer(s, eaEvent(pinned), result);
      expect(writesSince(m)).toEqual(writes);
      const reviews = suite.proxy
        .callsMatching({ clientTag: TAG, resource: 'subjectaccessreviews' })
        .filter((c) => c.seq > m);
      expect(reviews.length).toBeGreaterThan(0);
      const events = await listEventsAbout(kc, NS, { name: ag.metadata?.name ?? '' });
      if (result === 'cannot-recreate') {
        expect((await readEa(name))?.metadata?.uid).toBe(pinned.metadata?.uid);
        expect(events.map((e) => [e.reason, e.type])).toEqual([
          ['ExternalArtifactDriftLeft', 'Warning'],
        ]);
        expect(events[0]?.note).toContain(`as ServiceAccount ${NS}/${sa}`);
        await admin.deleteNamespacedCustomObject({ ...EA, namespace: NS, name });
      } else {
        expect(await readEa(name)).toBeUndefined();
        expect(events.map((e) => e.reason)).toEqual(['ExternalArtifactDriftHealed']);
      }
    },
  );
});

describe('heal-external-artifacts: pathPattern (source-watcher >= 2.2)', () => {
  beforeAll(newerAgFields);

  it('a generated ExternalArtifact pinned, the delete done and the bump failed: the next delivery (the delete’s own event) bumps', async () => {
    const s = await startHeal();
    const generated = uniqueName('app');
    const ag0 = await settledAg(pathPatternSpec(uniqueName('src')), []);
    const ag = await writeArtifactGeneratorStatus(
      agRefOf(ag0),
      {
        conditions: [succeeded(T0, 1, 1)],
        inventory: [{ name: generated, namespace: NS, digest: digestOf(1), filename: 'a.tar.gz' }],
      },
      kc,
    );
    await applyAsSourceWatcher(ag, generated, digestOf(1));
    const pinned = await pinDigest(generated, digestOf(7));
    const fault = suite.proxy.addFault({
      kind: 'status',
      status: 500,
      match: { clientTag: TAG, verb: 'patch', resource: 'artifactgenerators' },
      times: 1,
    });
    const m = mark();
    const first = await postEvent(s.url, eaEvent(pinned));
    fault.remove();
    expect(first.status).toBe(503);
    expect(await readEa(generated)).toBeUndefined();
    expect(await requestedAtOf(ag)).toBeUndefined();
    // The delete's own event arrives next: gone, and the inventory names it: the bump is done.
    await expectAnswer(s, eaEvent(pinned, APISERVER_DELETE), 'healed');
    expect(await requestedAtOf(ag)).toBe(formatTimeNano(T0 + 60_000));
    expect(writesSince(m)).toEqual([
      'delete externalartifacts 200',
      'patch artifactgenerators 500',
      'patch artifactgenerators 200',
    ]);
    // A redelivery of the update afterwards: the bump is pending, nothing more.
    await expectAnswer(s, eaEvent(pinned), 'request-pending');
    const events = await listEventsAbout(kc, NS, { name: ag.metadata?.name ?? '' });
    expect(events.map((e) => e.reason)).toEqual(['ExternalArtifactDriftHealed']);
  });
});
