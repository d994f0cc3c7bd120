// The simulator's ExternalArtifacts against the real kube-apiserver (docs/adr/0039), held to the
// facts measured on source-watcher v2.1.0 (issue 23): it writes the ExternalArtifacts before the
// verdict and the inventory; it never notices a deleted or changed one by itself (no watch on
// them) until a reconcile is requested; a requestedAt bump then re-creates a deleted one and
// restores a changed digest; but when another field manager owns status.artifact.digest (the way
// `kubectl patch` leaves it), its server-side apply conflicts and the AG goes
// Ready=False/ReconciliationFailed and retries without healing, until the object is re-created.

import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AG_RESOURCE as AG, EA_RESOURCE as EA } from '../harness/knative/index.js';
import type { VirtualClock } from '../harness/virtual-clock.js';
import type { SimAg, SimRequest, SourceWatcherSim } from '../harness/source-watcher-sim/index.js';
import type { EaWrite } from '../harness/source-watcher-sim/ea-api.js';
import { MERGE_PATCH as mergePatch, testKubeConfig, uniqueName } from '../support/apiserver.js';
import { createSimAg, deleteSimAgs, startSimWorld } from './sim-world.js';

const REQUESTED_AT = 'reconcile.fluxcd.io/requestedAt';
const BUILD_MS = 1_000;
const MIN = 60_000;

const raw = testKubeConfig().makeApiClient(CustomObjectsApi);

interface Ea {
  metadata: {
    name: string;
    uid: string;
    labels?: Record<string, string>;
    managedFields?: { manager: string; subresource?: string }[];
  };
  spec?: { sourceRef?: Record<string, string> };
  status?: { artifact?: { digest?: string } };
}

let namespace: string;
let clock: VirtualClock;
let sim: SourceWatcherSim;
/** Every simulator write, AG and ExternalArtifact, in the order answered. */
let order: string[];

beforeEach(async () => {
  order = [];
  ({ namespace, clock, sim } = await startSimWorld('swea', {
    buildTimeMs: BUILD_MS,
    externalArtifacts: true,
    onRequest: (r: SimRequest) => {
      if (r.verb === 'patch') order.push(`ag:${describeAgPatch(r)}`);
    },
    onExternalArtifactWrite: (w: EaWrite) => order.push(`ea:${w.verb}:${w.name}:${w.code}`),
  }));
});

afterEach(async () => {
  await sim.stop();
  await deleteSimAgs(namespace);
});

function describeAgPatch(r: SimRequest): string {
  const body = (r.body ?? {}) as { status?: Record<string, unknown>; metadata?: unknown };
  const status = body.status ?? {};
  const conditions = status['conditions'] as { type: string; status: string }[] | undefined;
  if (conditions) return `conditions:${conditions.map((c) => `${c.type}=${c.status}`).join(',')}`;
  if ('inventory' in status) return 'inventory';
  return r.subresource === 'status' ? `status:${Object.keys(status).join(',')}` : 'main';
}

async function createAg(artifacts = ['alpha', 'beta']): Promise<{ name: string; uid: string }> {
  const name = uniqueName('ag');
  const created = await createSimAg(namespace, name, artifacts);
  await sim.observed(created.metadata.resourceVersion ?? '');
  await clock.advance(5_000);
  return { name, uid: created.metadata.uid ?? '' };
}

const getAg = async (name: string): Promise<SimAg> =>
  (await raw.getNamespacedCustomObject({ ...AG, namespace, name })) as SimAg;
const listEas = async (uid: string): Promise<Ea[]> =>
  (
    (await raw.listNamespacedCustomObject({
      ...EA,
      namespace,
      labelSelector: `source.extensions.fluxcd.io/generator=${uid}`,
    })) as { items: Ea[] }
  ).items;
const ready = (ag: SimAg) => ag.status?.conditions?.find((c) => c.type === 'Ready');
const digests = (eas: Ea[]) =>
  Object.fromEntries(eas.map((e) => [e.metadata.name, e.status?.artifact?.digest]));
const inventoryDigests = (ag: SimAg) =>
  Object.fromEntries((ag.status?.inventory ?? []).map((e) => [e.name, e.digest]));

async function bump(name: string): Promise<void> {
  const res = (await raw.patchNamespacedCustomObject(
    {
      ...AG,
      namespace,
      name,
      body: { metadata: { annotations: { [REQUESTED_AT]: new Date(clock.now()).toISOString() } } },
    },
    mergePatch,
  )) as SimAg;
  await sim.observed(res.metadata.resourceVersion ?? '');
}

/** What `kubectl patch --subresource=status --type=merge` does: the patcher owns the digest. */
async function patchDigestAsKubectl(name: string, digest: string): Promise<void> {
  await raw.patchNamespacedCustomObjectStatus(
    {
      ...EA,
      namespace,
      name,
      fieldManager: 'kubectl-patch',
      body: { status: { artifact: { digest } } },
    },
    mergePatch,
  );
}

describe('source-watcher simulator: ExternalArtifacts', () => {
  it('generates one per artifact, labelled with the AG uid, its sourceRef the AG, owned by source-watcher, matching the inventory', async () => {
    const { name, uid } = await createAg();
    const ag = await getAg(name);
    expect(ready(ag)?.status).toBe('True');
    const eas = await listEas(uid);
    expect(eas.map((e) => e.metadata.name).sort()).toEqual(['alpha', 'beta']);
    for (const e of eas) {
      expect(e.spec?.sourceRef).toEqual({
        apiVersion: 'source.extensions.fluxcd.io/v1beta1',
        kind: 'ArtifactGenerator',
        name,
        namespace,
      });
      const status = e.metadata.managedFields?.find((m) => m.subresource === 'status');
      expect(status?.manager).toBe('source-watcher');
    }
    expect(digests(eas)).toEqual(inventoryDigests(ag));
  });

  it('writes them after the in-progress patch and before the Ready=True patch and the inventory (the recorded order)', async () => {
    const { name } = await createAg(['alpha']);
    const build = order.slice(order.indexOf('ag:conditions:Reconciling=True,Ready=Unknown'));
    const at = (w: string): number => build.indexOf(w);
    expect(at('ea:apply:alpha:200')).toBeGreaterThan(0);
    expect(at('ea:apply-status:alpha:200')).toBeGreaterThan(at('ea:apply:alpha:200'));
    expect(at('ag:conditions:Ready=True')).toBeGreaterThan(at('ea:apply-status:alpha:200'));
    expect(at('ag:inventory')).toBeGreaterThan(at('ag:conditions:Ready=True'));
    expect(ready(await getAg(name))?.status).toBe('True');
  });

  it('a deleted ExternalArtifact stays deleted for 55 minutes (no watch), and a requestedAt bump re-creates it', async () => {
    const { name, uid } = await createAg();
    const before = digests(await listEas(uid));
    await raw.deleteNamespacedCustomObject({ ...EA, namespace, name: 'alpha' });
    const reconciles = sim.reconcilesOf({ namespace, name }).length;
    await clock.advance(55 * MIN);
    expect((await listEas(uid)).map((e) => e.metadata.name)).toEqual(['beta']);
    expect(sim.reconcilesOf({ namespace, name })).toHaveLength(reconciles);
    await bump(name);
    await clock.advance(5_000);
    expect(digests(await listEas(uid))).toEqual(before);
    expect(sim.reconcilesOf({ namespace, name }).at(-1)).toMatchObject({
      outcome: 'Built',
      drift: 'ExternalArtifactsDiffer',
    });
  });

  it('a digest the patcher owns: a bump alone fails the AG (ReconciliationFailed) and retries without healing; a re-created object heals', async () => {
    const { name, uid } = await createAg();
    const before = digests(await listEas(uid));
    await patchDigestAsKubectl(
      'alpha',
      'sha256:0000000000000000000000000000000000000000000000000000000000000000',
    );
    await clock.advance(10 * MIN);
    expect(ready(await getAg(name))?.status).toBe('True'); // nothing noticed it
    const start = sim.reconcilesOf({ namespace, name }).length;
    await bump(name);
    await clock.advance(MIN);
    const failing = sim.reconcilesOf({ namespace, name }).slice(start);
    // Measured on the real source-watcher: 6 retries in 60 s, none healing.
    expect(failing.length).toBeGreaterThanOrEqual(6);
    expect(failing.every((r) => r.outcome === 'ReconciliationFailed')).toBe(true);
    const ag = await getAg(name);
    expect(ready(ag)).toMatchObject({ status: 'False', reason: 'ReconciliationFailed' });
    // source-watcher's message for it: the artifact, its status apply, the API server's 409 text.
    expect(ready(ag)?.message).toMatch(
      /^alpha reconcile failed: failed to patchStatus ExternalArtifact status: Apply failed with 1 conflict: conflict with "kubectl-patch".*\.status\.artifact\.digest/,
    );
    expect(digests(await listEas(uid))['alpha']).not.toBe(before['alpha']);
    // Re-created, the object has no foreign owner: the next retry heals it.
    await raw.deleteNamespacedCustomObject({ ...EA, namespace, name: 'alpha' });
    await clock.advance(2 * MIN);
    expect(ready(await getAg(name))?.status).toBe('True');
    expect(digests(await listEas(uid))).toEqual(before);
  });

  it.each(['disabled', 'Disabled'])(
    'paused (reconcile: %s): a bump is recorded as handled, nothing re-created, until re-enabled',
    async (value) => {
      const { name, uid } = await createAg(['alpha']);
      const before = digests(await listEas(uid));
      await raw.patchNamespacedCustomObject(
        {
          ...AG,
          namespace,
          name,
          body: { metadata: { annotations: { 'source.extensions.fluxcd.io/reconcile': value } } },
        },
        mergePatch,
      );
      await raw.deleteNamespacedCustomObject({ ...EA, namespace, name: 'alpha' });
      await bump(name);
      await clock.advance(MIN);
      const ag = await getAg(name);
      expect(ag.status?.lastHandledReconcileAt).toBe(ag.metadata.annotations?.[REQUESTED_AT]);
      expect(sim.reconcilesOf({ namespace, name }).at(-1)).toMatchObject({ outcome: 'Disabled' });
      expect(await listEas(uid)).toEqual([]);
      await raw.patchNamespacedCustomObject(
        {
          ...AG,
          namespace,
          name,
          body: { metadata: { annotations: { 'source.extensions.fluxcd.io/reconcile': null } } },
        },
        mergePatch,
      );
      await bump(name);
      await clock.advance(MIN);
      expect(digests(await listEas(uid))).toEqual(before);
    },
  );

  it('the digest changed with the patcher no longer owning it: a bump alone restores it', async () => {
    const { name, uid } = await createAg(['alpha']);
    const before = digests(await listEas(uid));
    // Server-side apply by a manager that then gives the field up: no owner but the value stays.
    await patchDigestAsKubectl(
      'alpha',
      'sha256:1111111111111111111111111111111111111111111111111111111111111111',
    );
    const current = (await raw.getNamespacedCustomObject({
      ...EA,
      namespace,
      name: 'alpha',
    })) as Ea & {
      metadata: { managedFields: unknown[] };
    };
    // Drop the patcher's entry (what the issue's measurement did before the bump).
    await raw.patchNamespacedCustomObject(
      {
        ...EA,
        namespace,
        name: 'alpha',
        body: {
          metadata: {
            managedFields: current.metadata.managedFields.filter(
              (m) => (m as { manager?: string }).manager !== 'kubectl-patch',
            ),
          },
        },
      },
      mergePatch,
    );
    await bump(name);
    await clock.advance(5_000);
    expect(ready(await getAg(name))?.status).toBe('True');
    expect(digests(await listEas(uid))).toEqual(before);
  });
});
