// heal-external-artifacts over real HTTP against the real kube-apiserver, as its own
// ServiceAccount (RBAC from knative/functions/heal-external-artifacts enforced): the no-op path,
// a deleted ExternalArtifact, a digest another field manager owns, an honest build, replicas and
// redeliveries, the recovery's AGs, the off switch and observe mode (docs/adr/0038), a degraded API
// server.
// It acts only when source-watcher will rebuild, and only on its own objects (docs/adr/0054), the
// tenant as `tenantKubeConfig(namespace)` (RBAC enforced): a paused AG with a pinned
// ExternalArtifact, an AG failed for another reason than the status-apply conflict (and one failed
// by it, with the API server's own conflict message), a pathPattern AG whose bump failed after the
// delete, a forged update event, and targets whose managed-by label or sourceRef name something
// else.

import { PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import * as k8s from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOTATION_ATTEMPTS,
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
import { createAgWithStatus } from '../../support/ag-states.js';
import { progressing, readyWith, succeeded } from '../../support/conditions.js';
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
import type { KubeProxy } from '../../support/kube-proxy.js';
import { functionSuite } from '../../support/function-suite.js';
import { listEventsAbout } from '../../support/kube-events.js';
import { ensureNewerAgFields } from '../../support/newer-ag-crd.js';
import { TENANT_NAME, tenantKubeConfig } from '../../support/tenant-identity.js';

const NS = 'cozy-system';
const T0 = Math.floor(Date.now() / 1000) * 1000;
const TAG = 'heal-external-artifacts';
const apply = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
const kc = testKubeConfig();
const raw = customObjects(kc);
const WRITES = ['create', 'update', 'patch', 'delete'];
const suite = functionSuite(TAG, kc);

const startHeal = (env: Record<string, string> = {}): Promise<Started> =>
  suite.startHeal(new SettableClock(T0 + 60_000), { env });

const digestOf = (n: number): string => `sha256:${String(n).repeat(64).slice(0, 64)}`;

/** A settled AG (Ready=True, inventory of one artifact) and its ExternalArtifact, as source-watcher writes it. */
async function settledPair(
  over: { annotations?: Record<string, string>; readyStatus?: 'True' | 'Unknown' } = {},
): Promise<{ ag: ArtifactGenerator; ea: ExternalArtifact }> {
  const ag = await createAgWithStatus(
    kc,
    {
      conditions: [over.readyStatus === 'Unknown' ? progressing(T0) : succeeded(T0)],
      observedSourcesDigest: digestOf(9),
      inventory: [],
    },
    over.annotations !== undefined ? { annotations: over.annotations } : {},
  );
  const name = ag.metadata?.name ?? '';
  const ea = await applyAsSourceWatcher(ag, digestOf(1));
  const withInventory = (await raw.patchNamespacedCustomObjectStatus(
    {
      ...AG,
      namespace: NS,
      name,
      body: {
        status: {
          inventory: [{ name, namespace: NS, digest: digestOf(1), filename: `${name}.tar.gz` }],
        },
      },
    },
    MERGE_PATCH,
  )) as ArtifactGenerator;
  return { ag: withInventory, ea };
}

/** heal-external-artifacts started (with `env`) and a settled pair. */
async function healWithPair(env: Record<string, string> = {}) {
  const s = await startHeal(env);
  return { s, ...(await settledPair()) };
}

/** The same, the pair's ExternalArtifact deleted. */
async function healWithEaDeleted(env: Record<string, string> = {}) {
  const world = await healWithPair(env);
  await deleteEa(world.ea);
  return world;
}

/**
 * source-watcher's server-side apply of an ExternalArtifact and its status (manager
 * source-watcher, as reconcileExternalArtifact does): `name` (the AG's by default) in `namespace`
 * (NS by default); `forceStatus: false` leaves a field another manager owns to it (a conflict).
 */
async function applyAsSourceWatcher(
  ag: ArtifactGenerator,
  digest: string,
  opts: { namespace?: string; name?: string; forceStatus?: boolean } = {},
): Promise<ExternalArtifact> {
  const namespace = opts.namespace ?? NS;
  const name = opts.name ?? ag.metadata?.name ?? '';
  const base = { ...EA, namespace, name, fieldManager: 'source-watcher' };
  await raw.patchNamespacedCustomObject(
    {
      ...base,
      force: true,
      body: {
        apiVersion: 'source.toolkit.fluxcd.io/v1',
        kind: EA_KIND,
        metadata: {
          name,
          namespace,
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
            namespace,
          },
        },
      },
    },
    apply,
  );
  return (await raw.patchNamespacedCustomObjectStatus(
    { ...base, force: opts.forceStatus ?? true, body: eaStatusBody(namespace, name, digest) },
    apply,
  )) as ExternalArtifact;
}

/** An ExternalArtifact's status as source-watcher writes it: an artifact with `digest`. */
function eaStatusBody(namespace: string, name: string, digest: string) {
  return {
    apiVersion: 'source.toolkit.fluxcd.io/v1',
    kind: EA_KIND,
    metadata: { name, namespace },
    status: {
      artifact: {
        digest,
        revision: 'latest@sha256:1',
        path: `externalartifact/${namespace}/${name}/a.tar.gz`,
        url: `http://source-watcher/${name}.tar.gz`,
        lastUpdateTime: '2026-12-01T10:00:00Z',
      },
    },
  };
}

async function patchDigestAsKubectl(
  ea: ExternalArtifact,
  digest: string,
): Promise<ExternalArtifact> {
  return (await raw.patchNamespacedCustomObjectStatus(
    {
      ...EA,
      namespace: NS,
      name: ea.metadata?.name ?? '',
      fieldManager: 'kubectl-patch',
      body: { status: { artifact: { digest } } },
    },
    MERGE_PATCH,
  )) as ExternalArtifact;
}

async function deleteEa(ea: ExternalArtifact): Promise<void> {
  await raw.deleteNamespacedCustomObject({ ...EA, namespace: NS, name: ea.metadata?.name ?? '' });
}

/** The ExternalArtifact `name` as the API server has it now; undefined when it cannot be read. */
const readEa = (name: string): Promise<ExternalArtifact | undefined> =>
  raw.getNamespacedCustomObject({ ...EA, namespace: NS, name }).then(
    (ea) => ea as ExternalArtifact,
    () => undefined,
  );

/** The ApiServerSource's event of `ea` (in NS unless it names its namespace). */
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

/** Posts `event` to `s`: answered 200 with `result`. */
async function expectAnswer(s: Started, event: CloudEvent<unknown>, result: string): Promise<void> {
  expect(await postEvent(s.url, event)).toMatchObject({ status: 200, body: { result } });
}

/** The calls this test's function made since `mark` (proxy sequence numbers). */
function callsSince(mark: number) {
  return suite.proxy
    .callsMatching({ clientTag: TAG })
    .filter((c) => c.seq > mark && c.resource !== 'events');
}
const mark = (): number => suite.proxy.calls.at(-1)?.seq ?? 0;
/** The writes among them, as "verb resource status". */
const writesSince = (since: number) =>
  callsSince(since)
    .filter((c) => WRITES.includes(c.verb))
    .map((c) => `${c.verb} ${c.resource} ${c.status}`);

/** The AG patches since `since` that succeeded (that the API server applied, when `applied`). */
const agPatchesSince = (since: number, applied = false) =>
  callsSince(since).filter(
    (c) =>
      c.verb === 'patch' &&
      c.resource === 'artifactgenerators' &&
      (applied ? c.upstreamStatus : c.status) === 200,
  );

/** The requestedAt annotation the AG has now. */
const requestedAtOf = async (ag: ArtifactGenerator): Promise<string | undefined> =>
  (await getArtifactGenerator(agRefOf(ag), kc)).metadata?.annotations?.[ANNOTATION_REQUESTED_AT];

/** The Events regarding `ag` (by name). */
const healEvents = (ag: ArtifactGenerator) =>
  listEventsAbout(kc, NS, { name: ag.metadata?.name ?? '' });

describe('heal-external-artifacts', () => {
  it('the no-op path (an update that matches the inventory) makes two cached reads and no write', async () => {
    const { s, ea } = await healWithPair();
    const m = mark();
    await expectAnswer(s, eaEvent(ea), 'in-step');
    const calls = callsSince(m);
    expect(calls.map((c) => `${c.verb} ${c.resource}`)).toEqual([
      'get artifactgenerators',
      'list externalartifacts',
    ]);
    expect(calls.every((c) => c.path.includes('resourceVersion=0'))).toBe(true);
  });

  it('a deleted ExternalArtifact: one requestedAt bump with a precondition, an Event; a redelivery bumps no more', async () => {
    const { s, ag, ea } = await healWithEaDeleted();
    const m = mark();
    const event = eaEvent(ea, APISERVER_DELETE);
    await expectAnswer(s, event, 'healed');
    expect(await requestedAtOf(ag)).toBe(formatTimeNano(T0 + 60_000));
    expect(writesSince(m)).toEqual(['patch artifactgenerators 200']);
    expect((await healEvents(ag)).map((e) => e.reason)).toEqual(['ExternalArtifactDriftHealed']);
    // The same event again (a redelivery): the bump is pending, nothing is written.
    const m2 = mark();
    await expectAnswer(s, event, 'request-pending');
    expect(writesSince(m2)).toEqual([]);
  });

  it('three replicas given the same drift at once bump exactly once', async () => {
    const replicas = await Promise.all([startHeal(), startHeal(), startHeal()]);
    const { ag, ea } = await settledPair();
    await deleteEa(ea);
    const m = mark();
    const event = eaEvent(ea, APISERVER_DELETE);
    const answers = await Promise.all(
      [...replicas, ...replicas].map((r) => postEvent(r.url, event)),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const bumps = agPatchesSince(m);
    expect(bumps).toHaveLength(1);
    expect(await requestedAtOf(ag)).toBeDefined();
  });

  it('a digest another field manager owns (kubectl patch): the object is deleted with preconditions, then one bump', async () => {
    const { s, ag, ea } = await healWithPair();
    const changed = await patchDigestAsKubectl(ea, digestOf(7));
    const m = mark();
    await expectAnswer(s, eaEvent(changed), 'healed');
    expect(await readEa(ea.metadata?.name ?? '')).toBeUndefined();
    expect(writesSince(m)).toEqual([
      'delete externalartifacts 200',
      'patch artifactgenerators 200',
    ]);
    const events = await healEvents(ag);
    expect(events.map((e) => e.reason)).toEqual(['ExternalArtifactDriftHealed']);
    expect(events[0]?.note).toContain('kubectl');
  });

  it('a stale event does not delete an object changed since (uid/resourceVersion preconditions)', async () => {
    const { s, ea } = await healWithPair();
    const changed = await patchDigestAsKubectl(ea, digestOf(7));
    // Changed again after the event was made: the listed copy is newer and judged instead.
    await patchDigestAsKubectl(changed, digestOf(8));
    await expectAnswer(s, eaEvent(changed), 'healed');
    expect(await readEa(ea.metadata?.name ?? '')).toBeUndefined();
  });

  it('an honest build in flight (source-watcher wrote the new digest, the inventory follows) is left alone', async () => {
    const { s, ag, ea } = await healWithPair();
    const next = await applyAsSourceWatcher(ag, digestOf(2));
    const m = mark();
    await expectAnswer(s, eaEvent(next), 'honest-build');
    expect(writesSince(m)).toEqual([]);
    expect(await readEa(ea.metadata?.name ?? '')).toBeDefined();
  });

  it('an AG the recovery works on, or one building, is left alone after one cached read', async () => {
    const s = await startHeal();
    for (const [over, why] of [
      [{ annotations: { [ANNOTATION_ATTEMPTS]: '1' } }, 'recovery'],
      [{ readyStatus: 'Unknown' as const }, 'not-ready'],
    ] as const) {
      const { ea } = await settledPair(over);
      await deleteEa(ea);
      const m = mark();
      await expectAnswer(s, eaEvent(ea, APISERVER_DELETE), why);
      expect(callsSince(m).map((c) => `${c.verb} ${c.resource}`)).toEqual([
        'get artifactgenerators',
      ]);
    }
  });

  it('RECOVERY_HEAL_EXTERNAL_ARTIFACTS=off: ignored, no API call', async () => {
    const { s, ea } = await healWithEaDeleted({ RECOVERY_HEAL_EXTERNAL_ARTIFACTS: 'off' });
    const m = mark();
    await expectAnswer(s, eaEvent(ea, APISERVER_DELETE), 'disabled');
    expect(callsSince(m)).toEqual([]);
  });

  it('observe mode: a "would heal" Event, nothing else written', async () => {
    const { s, ag, ea } = await healWithEaDeleted({ RECOVERY_MODE: 'observe' });
    const m = mark();
    await expectAnswer(s, eaEvent(ea, APISERVER_DELETE), 'observed');
    expect(writesSince(m)).toEqual([]);
    expect(await requestedAtOf(ag)).toBeUndefined();
    expect((await healEvents(ag)).map((e) => e.reason)).toEqual(['ExternalArtifactDriftWouldHeal']);
  });

  it('bad input: 400 and no call; other kinds and ExternalArtifacts of no AG: 200 and no call', async () => {
    const s = await startHeal();
    const m = mark();
    expect(
      await postEvent(s.url, eaEvent({ metadata: { name: 'Bad_Name', namespace: NS } })),
    ).toMatchObject({ status: 400 });
    const plain = { metadata: { name: 'plain', namespace: NS }, spec: {} };
    await expectAnswer(s, eaEvent(plain), 'not-generated');
    const other = cloudEvent({
      type: APISERVER_UPDATE,
      data: plain,
      extensions: { kind: 'ArtifactGenerator' },
    });
    await expectAnswer(s, other, 'other-kind');
    expect(callsSince(m)).toEqual([]);
  });
});

describe('heal-external-artifacts on a degraded API server', () => {
  // Each call in turn fails (5xx, 429, a cut connection, a timeout): the answer is 503 (the Broker
  // redelivers), nothing half done is left that the redelivery cannot finish, and the redelivery
  // heals with one bump in all. A read after the delivery's first answer, and a write with its
  // precondition (the delete, the bump), fail twice: once, they are sent again in place (ADR 70,
  // ADR 71).
  it.each<
    [
      string,
      { verb: 'get' | 'list' | 'delete' | 'patch'; resource: string },
      'status' | 'reset' | 'timeout',
      number,
      number,
    ]
  >([
    ['the AG read', { verb: 'get', resource: 'artifactgenerators' }, 'status', 503, 1],
    [
      'the ExternalArtifact list (and its retry)',
      { verb: 'list', resource: 'externalartifacts' },
      'status',
      429,
      2,
    ],
    ['the delete', { verb: 'delete', resource: 'externalartifacts' }, 'reset', 0, 2],
    ['the bump', { verb: 'patch', resource: 'artifactgenerators' }, 'status', 500, 2],
    ['the bump (timeout)', { verb: 'patch', resource: 'artifactgenerators' }, 'timeout', 0, 2],
  ])(
    '%s fails: 503, then the redelivery heals with one bump',
    async (_what, match, kind, status, times) => {
      const s = await startHeal({ KUBE_REQUEST_TIMEOUT_MS: '1000' });
      const { ag, ea } = await settledPair();
      const changed = await patchDigestAsKubectl(ea, digestOf(5));
      const rule =
        kind === 'status'
          ? { kind, status, match: { clientTag: TAG, ...match }, times }
          : kind === 'timeout'
            ? { kind, delayMs: 3000, match: { clientTag: TAG, ...match }, times }
            : { kind, match: { clientTag: TAG, ...match }, times };
      const fault = suite.proxy.addFault(rule as Parameters<KubeProxy['addFault']>[0]);
      const m = mark();
      const first = await postEvent(s.url, eaEvent(changed));
      fault.remove();
      expect(first.status).toBe(503);
      // The redelivery (the Broker resends the same event).
      const again = await postEvent(s.url, eaEvent(changed));
      expect(again).toMatchObject({ status: 200 });
      expect(await requestedAtOf(ag)).toBeDefined();
      expect(await readEa(ea.metadata?.name ?? '')).toBeUndefined();
      const bumps = agPatchesSince(m);
      expect(bumps).toHaveLength(1);
    },
  );

  it('the bump applied but its answer lost: sent again in place, refused by its precondition, and the re-read finds it pending (no second bump)', async () => {
    const { s, ag, ea } = await healWithEaDeleted();
    const fault = suite.proxy.addFault({
      kind: 'status',
      status: 500,
      phase: 'after',
      match: { clientTag: TAG, verb: 'patch', resource: 'artifactgenerators' },
      times: 1,
    });
    const m = mark();
    // ADR 71: the bump carries the AG's resourceVersion, so its second send answers 409 and the
    // delivery re-reads the AG: the bump it made is pending.
    await expectAnswer(s, eaEvent(ea, APISERVER_DELETE), 'request-pending');
    fault.remove();
    expect(
      callsSince(m)
        .filter((c) => c.verb === 'patch' && c.resource === 'artifactgenerators')
        .map((c) => c.status),
    ).toEqual([500, 409]);
    const applied = agPatchesSince(m, true);
    expect(applied).toHaveLength(1);
    expect(await requestedAtOf(ag)).toBeDefined();
    // A redelivery afterwards: pending, nothing more written.
    await expectAnswer(s, eaEvent(ea, APISERVER_DELETE), 'request-pending');
    expect(agPatchesSince(m, true)).toHaveLength(1);
  });

  it('Events refused (403): the heal is still done and answered 200', async () => {
    const { s, ag, ea } = await healWithEaDeleted();
    const fault = suite.proxy.addFault({
      kind: 'status',
      status: 403,
      match: { clientTag: TAG, resource: 'events' },
    });
    try {
      await expectAnswer(s, eaEvent(ea, APISERVER_DELETE), 'healed');
    } finally {
      fault.remove();
    }
    expect(await requestedAtOf(ag)).toBeDefined();
  });
});

describe("heal-external-artifacts: a tenant's AGs and ExternalArtifacts", () => {
  /** The tenant's namespace. */
  const TENANT_NS = 'heal-trust';
  let tenant: ReturnType<typeof customObjects>;

  beforeAll(async () => {
    const tkc: KubeConfig = await tenantKubeConfig(TENANT_NS);
    tenant = customObjects(tkc);
  });

  /** An AG created by the tenant (its spec as given), its status as source-watcher writes it. */
  async function settledAg(
    spec: Record<string, unknown> | undefined,
    artifacts: string[],
    annotations?: Record<string, string>,
  ): Promise<ArtifactGenerator> {
    const name = uniqueName('ag');
    const created = (await tenant.createNamespacedCustomObject({
      ...AG,
      namespace: TENANT_NS,
      body: {
        apiVersion: 'source.extensions.fluxcd.io/v1beta1',
        kind: 'ArtifactGenerator',
        metadata: { name, namespace: TENANT_NS, ...(annotations ? { annotations } : {}) },
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
          namespace: TENANT_NS,
          digest: digestOf(1),
          filename: `${a}.tar.gz`,
        })),
      },
      kc,
    );
  }

  /** source-watcher's server-side apply of `name` in TENANT_NS and its status (reconcileExternalArtifact). */
  function applyTenantEa(
    ag: ArtifactGenerator,
    name: string,
    digest: string,
  ): Promise<ExternalArtifact> {
    return applyAsSourceWatcher(ag, digest, { namespace: TENANT_NS, name, forceStatus: false });
  }

  function statusBody(name: string, digest: string) {
    return eaStatusBody(TENANT_NS, name, digest);
  }

  /** The tenant's `kubectl patch --subresource status` of the digest (it then owns the field). */
  async function pinDigest(name: string, digest: string): Promise<ExternalArtifact> {
    return (await tenant.patchNamespacedCustomObjectStatus(
      {
        ...EA,
        namespace: TENANT_NS,
        name,
        fieldManager: 'kubectl-patch',
        body: { status: { artifact: { digest } } },
      },
      MERGE_PATCH,
    )) as ExternalArtifact;
  }

  /** The ExternalArtifact `name` in TENANT_NS; undefined when it cannot be read. */
  const readTenantEa = (name: string): Promise<ExternalArtifact | undefined> =>
    raw.getNamespacedCustomObject({ ...EA, namespace: TENANT_NS, name }).then(
      (ea) => ea as ExternalArtifact,
      () => undefined,
    );

  /** The writes since `since` but Events and SubjectAccessReviews, as "verb resource status". */
  const tenantWritesSince = (since: number) =>
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

  describe('only when source-watcher will rebuild', () => {
    it.each(['disabled', 'Disabled'])(
      'a paused AG (reconcile: %s) with an ExternalArtifact the operator pinned: neither deleted nor bumped',
      async (value) => {
        const s = await startHeal();
        const name = uniqueName('ea');
        const ag = await settledAg(undefined, [name]);
        await applyTenantEa(ag, name, digestOf(1));
        // The operator pauses the AG and pins the ExternalArtifact (the tenant's own objects).
        await tenant.patchNamespacedCustomObject(
          {
            ...AG,
            namespace: TENANT_NS,
            name: ag.metadata?.name ?? '',
            body: { metadata: { annotations: { 'source.extensions.fluxcd.io/reconcile': value } } },
          },
          MERGE_PATCH,
        );
        const pinned = await pinDigest(name, digestOf(7));
        const m = mark();
        await expectAnswer(s, eaEvent(pinned), 'paused');
        expect(tenantWritesSince(m)).toEqual([]);
        expect((await readTenantEa(name))?.status?.artifact?.digest).toBe(digestOf(7));
        expect(await requestedAtOf(ag)).toBeUndefined();
        await raw.deleteNamespacedCustomObject({ ...EA, namespace: TENANT_NS, name });
      },
    );

    it.each<[string, string, (name: string) => string]>([
      [
        'SourceFetchFailed',
        'SourceFetchFailed',
        () => "get sources failed: OCIRepository 'x/y' not found",
      ],
      [
        'a terminal pathPattern error',
        'BuildFailed',
        () => 'failed to expand path pattern: invalid',
      ],
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
        await applyTenantEa(ag, name, digestOf(1));
        await failWith(ag, reason, message(name));
        const pinned = await pinDigest(name, digestOf(7));
        const m = mark();
        await expectAnswer(s, eaEvent(pinned), 'failed');
        expect(tenantWritesSince(m)).toEqual([]);
        expect((await readTenantEa(name))?.metadata?.uid).toBe(pinned.metadata?.uid);
        await raw.deleteNamespacedCustomObject({ ...EA, namespace: TENANT_NS, name });
      },
    );

    it("an AG failed by the status-apply conflict (the API server's own 409 message): deleted, then bumped", async () => {
      const s = await startHeal();
      const name = uniqueName('ea');
      const ag = await settledAg(undefined, [name]);
      await applyTenantEa(ag, name, digestOf(1));
      const pinned = await pinDigest(name, digestOf(7));
      // source-watcher's status apply (no force) now conflicts: the message it puts in Ready.
      const conflict = await raw
        .patchNamespacedCustomObjectStatus(
          {
            ...EA,
            namespace: TENANT_NS,
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
      expect(tenantWritesSince(m)).toEqual([
        'delete externalartifacts 200',
        'patch artifactgenerators 200',
      ]);
      expect(await readTenantEa(name)).toBeUndefined();
    });
  });

  describe('the event is used only on the cached round', () => {
    it('a forged update (higher resourceVersion, another digest, no managedFields) bumps nothing', async () => {
      const s = await startHeal();
      const name = uniqueName('ea');
      const ag = await settledAg(undefined, [name]);
      const real = await applyTenantEa(ag, name, digestOf(1));
      const forged: ExternalArtifact = {
        ...real,
        metadata: { ...real.metadata, resourceVersion: '999999999' },
        status: { artifact: { ...real.status?.artifact, digest: digestOf(6) } },
      };
      delete forged.metadata?.managedFields;
      const m = mark();
      await expectAnswer(s, eaEvent(forged), 'in-step');
      expect(tenantWritesSince(m)).toEqual([]);
      expect(await requestedAtOf(ag)).toBeUndefined();
      expect((await readTenantEa(name))?.metadata?.uid).toBe(real.metadata?.uid);
    });
  });

  describe('only its own objects', () => {
    it.each<[string, (name: string, agName: string) => Promise<unknown>]>([
      [
        'managed-by label names another controller',
        (name) =>
          tenant.patchNamespacedCustomObject(
            {
              ...EA,
              namespace: TENANT_NS,
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
            {
              ...EA,
              namespace: TENANT_NS,
              name,
              body: { spec: { sourceRef: { name: 'another-ag' } } },
            },
            MERGE_PATCH,
          ),
      ],
    ])(
      'a target whose %s is not deleted, nor its AG bumped into the conflict',
      async (_what, reshape) => {
        const s = await startHeal();
        const [name, sibling] = [uniqueName('ea'), uniqueName('ea')];
        const ag = await settledAg(undefined, [sibling, name]);
        const inStep = await applyTenantEa(ag, sibling, digestOf(1));
        await applyTenantEa(ag, name, digestOf(1));
        await reshape(name, ag.metadata?.name ?? '');
        const pinned = await pinDigest(name, digestOf(7));
        const m = mark();
        // The sibling's event (it names the AG): the AG's list shows the reshaped object.
        await expectAnswer(s, eaEvent(inStep), 'not-ours');
        expect(tenantWritesSince(m)).toEqual([]);
        expect((await readTenantEa(name))?.metadata?.uid).toBe(pinned.metadata?.uid);
        expect(await requestedAtOf(ag)).toBeUndefined();
        for (const n of [name, sibling]) {
          await raw.deleteNamespacedCustomObject({ ...EA, namespace: TENANT_NS, name: n });
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
  const newerAgFields = (): Promise<void> => ensureNewerAgFields(kc, TENANT_NS);

  describe('v2.3 spec.serviceAccountName (re-created as that identity)', () => {
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
        await applyTenantEa(ag, name, digestOf(1));
        const pinned = await pinDigest(name, digestOf(7));
        const m = mark();
        await expectAnswer(s, eaEvent(pinned), result);
        expect(tenantWritesSince(m)).toEqual(writes);
        const reviews = suite.proxy
          .callsMatching({ clientTag: TAG, resource: 'subjectaccessreviews' })
          .filter((c) => c.seq > m);
        expect(reviews.length).toBeGreaterThan(0);
        const events = await listEventsAbout(kc, TENANT_NS, { name: ag.metadata?.name ?? '' });
        if (result === 'cannot-recreate') {
          expect((await readTenantEa(name))?.metadata?.uid).toBe(pinned.metadata?.uid);
          expect(events.map((e) => [e.reason, e.type])).toEqual([
            ['ExternalArtifactDriftLeft', 'Warning'],
          ]);
          expect(events[0]?.note).toContain(`as ServiceAccount ${TENANT_NS}/${sa}`);
          await raw.deleteNamespacedCustomObject({ ...EA, namespace: TENANT_NS, name });
        } else {
          expect(await readTenantEa(name)).toBeUndefined();
          expect(events.map((e) => e.reason)).toEqual(['ExternalArtifactDriftHealed']);
        }
      },
    );
  });

  describe('pathPattern (source-watcher >= 2.2)', () => {
    beforeAll(newerAgFields);

    it('a generated ExternalArtifact pinned, the delete done and the bump failed: the next delivery (the delete’s own event) bumps', async () => {
      const s = await startHeal();
      const generated = uniqueName('app');
      const ag0 = await settledAg(pathPatternSpec(uniqueName('src')), []);
      const ag = await writeArtifactGeneratorStatus(
        agRefOf(ag0),
        {
          conditions: [succeeded(T0, 1, 1)],
          inventory: [
            { name: generated, namespace: TENANT_NS, digest: digestOf(1), filename: 'a.tar.gz' },
          ],
        },
        kc,
      );
      await applyTenantEa(ag, generated, digestOf(1));
      const pinned = await pinDigest(generated, digestOf(7));
      const fault = suite.proxy.addFault({
        kind: 'status',
        status: 500,
        match: { clientTag: TAG, verb: 'patch', resource: 'artifactgenerators' },
        // Twice: once, the preconditioned bump is sent again in place (ADR 71).
        times: 2,
      });
      const m = mark();
      const first = await postEvent(s.url, eaEvent(pinned));
      fault.remove();
      expect(first.status).toBe(503);
      expect(await readTenantEa(generated)).toBeUndefined();
      expect(await requestedAtOf(ag)).toBeUndefined();
      // The delete's own event arrives next: gone, and the inventory names it: the bump is done.
      await expectAnswer(s, eaEvent(pinned, APISERVER_DELETE), 'healed');
      expect(await requestedAtOf(ag)).toBe(formatTimeNano(T0 + 60_000));
      expect(tenantWritesSince(m)).toEqual([
        'delete externalartifacts 200',
        'patch artifactgenerators 500',
        'patch artifactgenerators 500',
        'patch artifactgenerators 200',
      ]);
      // A redelivery of the update afterwards: the bump is pending, nothing more.
      await expectAnswer(s, eaEvent(pinned), 'request-pending');
      const events = await listEventsAbout(kc, TENANT_NS, { name: ag.metadata?.name ?? '' });
      expect(events.map((e) => e.reason)).toEqual(['ExternalArtifactDriftHealed']);
    });
  });
});
