// Reads through the adapter against the real test API server: pagination over 1,200 AGs, cached
// reads, PackageSources, NotFound for each kind, and a round trip of every field the decision core
// reads. Objects are written with client-node's own CustomObjectsApi, so the adapter is checked
// against an independent writer.

import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ArtifactGenerator } from '../../shared/core/objects/types.js';
import { createKubeClient } from '../../shared/kube/client.js';
import { isKubeError } from '../../shared/kube/errors.js';
import type { KubePort, ListOptions } from '../../shared/kube/port.js';
import { createTransport } from '../../shared/kube/transport.js';
import { AG_RESOURCE as AG } from '../harness/knative/index.js';
import {
  ensureNamespace,
  makeArtifactGenerator,
  makePackageSource,
  MERGE_PATCH,
  testKubeConfig,
  uniqueName,
} from '../support/apiserver.js';
import { succeeded } from '../support/conditions.js';
import { failureOf } from '../support/kube-failure.js';
import { pool } from '../support/raw-kube.js';
import { systemClock } from '../../shared/runtime/clock.js';

const PS = { group: 'cozystack.io', version: 'v1alpha1', plural: 'packagesources' };

const kubeConfig = testKubeConfig();
const raw = kubeConfig.makeApiClient(CustomObjectsApi);
const kube = createKubeClient({
  clock: systemClock,
  kubeConfig,
  fieldManager: 'adapter-read-test',
});

/** An AG from support/apiserver's builder, `meta` added to its metadata. */
function agBody(namespace: string, name: string, meta: Record<string, unknown> = {}): object {
  const ag = makeArtifactGenerator({ namespace, name });
  return { ...ag, metadata: { ...ag.metadata, ...meta } };
}

const psBody = (name: string) => makePackageSource({ name, spec: {} });

async function readAll(opts: ListOptions): Promise<{ items: ArtifactGenerator[]; pages: number }> {
  const items: ArtifactGenerator[] = [];
  let pages = 0;
  let continueToken: string | undefined;
  do {
    const page = await kube.listArtifactGenerators({
      ...opts,
      ...(continueToken !== undefined ? { continueToken } : {}),
    });
    pages += 1;
    items.push(...page.items);
    continueToken = page.continueToken;
    if (pages > 100) throw new Error('pagination does not end');
  } while (continueToken !== undefined);
  return { items, pages };
}

const key = (ag: ArtifactGenerator): string => `${ag.metadata?.namespace}/${ag.metadata?.name}`;

describe('listing 1,200 ArtifactGenerators', () => {
  // Three namespaces of our own: 600 + 400 + 200.
  const namespaces = [uniqueName('ns-a'), uniqueName('ns-b'), uniqueName('ns-c')];
  const sizes = [600, 400, 200];
  const ours = new Set<string>();

  beforeAll(async () => {
    for (const ns of namespaces) await ensureNamespace(ns);
    const todo: [string, string][] = [];
    namespaces.forEach((ns, i) => {
      for (let n = 0; n < (sizes[i] ?? 0); n += 1)
        todo.push([ns, `ag-${String(n).padStart(4, '0')}`]);
    });
    // Bulk creation over one keep-alive connection pool (client-node's own client opens a new
    // TLS connection per request, which makes 1,200 creates several times slower).
    const send = createTransport(kubeConfig, 30_000);
    await pool(todo, 8, async ([ns, name]) => {
      const res = await send({
        method: 'POST',
        path: `/apis/${AG.group}/${AG.version}/namespaces/${ns}/${AG.plural}`,
        body: agBody(ns, name),
      });
      if (res.kind !== 'response' || res.statusCode !== 201) {
        throw new Error(`create ${ns}/${name}: ${JSON.stringify(res).slice(0, 300)}`);
      }
      ours.add(`${ns}/${name}`);
    });
  }, 300_000);

  afterAll(async () => {
    for (const namespace of namespaces) {
      await raw.deleteCollectionNamespacedCustomObject({ ...AG, namespace });
    }
  }, 120_000);

  it('across all namespaces: every AG exactly once, in pages of 500', async () => {
    const { items, pages } = await readAll({ limit: 500 });
    const keys = items.map(key);
    expect(new Set(keys).size).toBe(keys.length);
    const mine = keys.filter((k) => ours.has(k));
    expect(mine).toHaveLength(1_200);
    expect(pages).toBe(Math.ceil(items.length / 500));
    expect(pages).toBeGreaterThanOrEqual(3);
    for (const ag of items) {
      expect(ag.metadata?.resourceVersion).toMatch(/^\d+$/);
      expect(ag.spec).toBeDefined();
    }
  });

  it('the default page size is 500', async () => {
    const page = await kube.listArtifactGenerators();
    expect(page.items).toHaveLength(500);
    expect(page.continueToken).toBeDefined();
    expect(page.resourceVersion).toMatch(/^\d+$/);
  });

  it.each([
    [0, 250, 3],
    [1, 400, 1],
    [2, 7, 29],
  ])('in one namespace (#%i) with limit %i: %i pages', async (index, limit, expectedPages) => {
    const namespace = namespaces[index] as string;
    const { items, pages } = await readAll({ namespace, limit });
    expect(pages).toBe(expectedPages);
    expect(items.every((ag) => ag.metadata?.namespace === namespace)).toBe(true);
    const names = new Set(items.map((ag) => ag.metadata?.name));
    expect(names.size).toBe(sizes[index]);
  });

  it('cached list (resourceVersion=0) sees the same AGs', async () => {
    const namespace = namespaces[1] as string;
    // The watch cache may trail etcd by a moment: wait until it has caught up.
    let count = 0;
    for (let tries = 0; tries < 50; tries += 1) {
      const { items } = await readAll({ namespace, cached: true, limit: 150 });
      count = new Set(items.map(key)).size;
      if (count === sizes[1]) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(count).toBe(sizes[1]);
  });

  it('an empty namespace lists nothing, with no continue token', async () => {
    const page = await kube.listArtifactGenerators({ namespace: uniqueName('empty') });
    expect(page.items).toEqual([]);
    expect(page.continueToken).toBeUndefined();
  });

  it('a garbage continue token is a typed error', async () => {
    const err = await failureOf(
      kube.listArtifactGenerators({
        namespace: namespaces[0] as string,
        continueToken: 'bm90LWEtdG9rZW4',
      }),
    );
    expect(err.kind).toBe('Invalid');
    expect(err.statusCode).toBe(400);
  });
});

describe('single reads', () => {
  const namespace = uniqueName('read');
  const agName = uniqueName('ag');
  const psName = uniqueName('ps');
  const PS_READY = succeeded(Date.UTC(2025, 2, 4, 5, 6, 7));

  beforeAll(async () => {
    await ensureNamespace(namespace);
    await raw.createNamespacedCustomObject({ ...AG, namespace, body: agBody(namespace, agName) });
    await raw.createClusterCustomObject({ ...PS, body: psBody(psName) });
    await raw.patchClusterCustomObjectStatus(
      { ...PS, name: psName, body: { status: { conditions: [PS_READY] } } },
      MERGE_PATCH,
    );
  });
  afterAll(async () => {
    await raw.deleteNamespacedCustomObject({ ...AG, namespace, name: agName });
    await raw.deleteClusterCustomObject({ ...PS, name: psName });
  });

  it('gets an AG, live and cached', async () => {
    const live = await kube.getArtifactGenerator({ namespace, name: agName });
    expect(live.metadata?.name).toBe(agName);
    expect(live.metadata?.namespace).toBe(namespace);
    expect(live.kind).toBe('ArtifactGenerator');
    let cached: ArtifactGenerator | undefined;
    for (let tries = 0; tries < 50 && cached === undefined; tries += 1) {
      cached = await kube
        .getArtifactGenerator({ namespace, name: agName }, { cached: true })
        .catch((err: unknown) => {
          if (isKubeError(err, 'NotFound')) return undefined;
          throw err;
        });
      if (cached === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    expect(cached?.metadata?.uid).toBe(live.metadata?.uid);
  });

  it('gets a PackageSource with its status', async () => {
    const ps = await kube.getPackageSource(psName);
    expect(ps.kind).toBe('PackageSource');
    expect(ps.metadata?.name).toBe(psName);
    expect(ps.metadata?.namespace).toBeUndefined();
    expect(ps.status?.conditions).toEqual([PS_READY]);
  });

  it('lists PackageSources', async () => {
    const names: string[] = [];
    let continueToken: string | undefined;
    do {
      const page = await kube.listPackageSources({
        limit: 2,
        ...(continueToken !== undefined ? { continueToken } : {}),
      });
      names.push(...page.items.map((p) => p.metadata?.name ?? ''));
      continueToken = page.continueToken;
    } while (continueToken !== undefined);
    expect(names).toContain(psName);
    expect(new Set(names).size).toBe(names.length);
  });

  const missing: [string, (k: KubePort) => Promise<unknown>][] = [
    ['getArtifactGenerator', (k) => k.getArtifactGenerator({ namespace, name: 'missing' })],
    [
      'getArtifactGenerator (missing namespace)',
      (k) => k.getArtifactGenerator({ namespace: 'no-such-ns', name: 'missing' }),
    ],
    ['getPackageSource', (k) => k.getPackageSource('missing')],
    ['getPingSource', (k) => k.getPingSource(namespace, 'missing')],
    [
      'patchArtifactGeneratorAnnotations',
      (k) => k.patchArtifactGeneratorAnnotations({ namespace, name: 'missing' }, { a: 'b' }),
    ],
    [
      'patchArtifactGeneratorConditions',
      (k) => k.patchArtifactGeneratorConditions({ namespace, name: 'missing' }, []),
    ],
    ['patchPackageSourceConditions', (k) => k.patchPackageSourceConditions('missing', [])],
    [
      'patchPingSource',
      (k) => k.patchPingSource(namespace, 'missing', { spec: { schedule: '* * * * *' } }),
    ],
    ['deletePingSource', (k) => k.deletePingSource(namespace, 'missing')],
  ];
  it.each(missing)('%s of a missing object -> NotFoundError', async (_name, call) => {
    const err = await failureOf(call(kube));
    expect(err.kind).toBe('NotFound');
    expect(err.statusCode).toBe(404);
    expect(err.message).toContain('missing');
    expect(err.message).toContain('not found');
  });
});

describe('round trip of every field the decision core reads', () => {
  const namespace = uniqueName('rt');
  const name = uniqueName('ag');
  // The owner exists: kube-controller-manager's garbage collector deletes an AG whose owner does
  // not (its uid is filled in once the PackageSource is created).
  const ownerUid = '';
  const status = {
    conditions: [
      {
        type: 'Ready',
        status: 'Unknown',
        reason: 'Progressing',
        message: 'Reconciliation in progress',
        lastTransitionTime: '2025-01-02T03:04:05Z',
        observedGeneration: 1,
      },
      {
        type: 'Reconciling',
        status: 'True',
        reason: 'Progressing',
        message: 'reconciling',
        lastTransitionTime: '2025-01-02T03:04:06Z',
        observedGeneration: 1,
      },
    ],
    inventory: [
      { name: 'a1', namespace, digest: 'sha256:0123abcd', filename: 'a1.tar.gz' },
      { name: 'a2', namespace, digest: 'sha256:4567ef01', filename: 'a2.tar.gz' },
    ],
    observedSourcesDigest: 'sha256:feedface',
    lastHandledReconcileAt: '2025-01-02T03:00:00Z',
  };
  const meta = {
    labels: { 'cozystack.io/packagesource': name },
    annotations: {
      'reconcile.fluxcd.io/requestedAt': '2025-01-02T03:00:00Z',
      'cozystack.io/source-watcher-recovery-attempts': '2',
    },
    ownerReferences: [
      {
        apiVersion: 'cozystack.io/v1alpha1',
        kind: 'PackageSource',
        name,
        uid: ownerUid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
    finalizers: ['test.cozystack.io/hold'],
  };

  beforeAll(async () => {
    await ensureNamespace(namespace);
    const owner = (await raw.createClusterCustomObject({ ...PS, body: psBody(name) })) as {
      metadata: { uid: string };
    };
    for (const ref of meta.ownerReferences) ref.uid = owner.metadata.uid;
    await raw.createNamespacedCustomObject({
      ...AG,
      namespace,
      body: agBody(namespace, name, meta),
    });
    await raw.patchNamespacedCustomObjectStatus(
      { ...AG, namespace, name, body: { status } },
      MERGE_PATCH,
    );
  });
  afterAll(async () => {
    await raw.patchNamespacedCustomObject(
      { ...AG, namespace, name, body: { metadata: { finalizers: null } } },
      MERGE_PATCH,
    );
  });

  it('reads back status, metadata and ownership exactly', async () => {
    const ag = await kube.getArtifactGenerator({ namespace, name });
    expect(ag.status).toEqual(status);
    expect(ag.metadata?.generation).toBe(1);
    expect(typeof ag.metadata?.generation).toBe('number');
    expect(ag.metadata?.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(ag.metadata?.deletionTimestamp).toBeUndefined();
    expect(ag.metadata?.labels).toEqual(meta.labels);
    expect(ag.metadata?.annotations).toEqual(meta.annotations);
    expect(ag.metadata?.ownerReferences).toEqual(meta.ownerReferences);
    expect(ag.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a list returns the same object as a get', async () => {
    const got = await kube.getArtifactGenerator({ namespace, name });
    const page = await kube.listArtifactGenerators({ namespace });
    expect(page.items).toHaveLength(1);
    expect(page.items[0]?.status).toEqual(got.status);
    expect(page.items[0]?.metadata?.resourceVersion).toBe(got.metadata?.resourceVersion);
  });

  it('shows deletionTimestamp while a finalizer holds the AG', async () => {
    await raw.deleteNamespacedCustomObject({ ...AG, namespace, name });
    const ag = await kube.getArtifactGenerator({ namespace, name });
    expect(ag.metadata?.deletionTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(ag.status).toEqual(status);
  });
});
