// A fleet writer for the test API server: raw REST through the project's transport (one
// keep-alive agent, the kubeconfig's client certificate), for the benches' thousands of objects.
// It creates the objects the functions then read; the functions never use it. The objects are
// apiserver.ts's (makeArtifactGenerator, makePackageSource) with the realistic fixture's spec or a
// compact one; statuses come from ag-states.ts (healthyStatus/stuckStatus with an AgShape): every
// AG in a state below is one create and one status patch.

import type { KubeConfig } from '@kubernetes/client-node';
import {
  AG_API_VERSION,
  AG_PLURAL,
  PS_API_VERSION,
  PS_PLURAL,
  type ArtifactGenerator,
  type ArtifactGeneratorStatus,
  type PackageSource,
} from '../../shared/core/objects/types.js';
import { createTransport, type HttpRequest, type Send } from '../../shared/kube/transport.js';
import { loadRealisticAg } from './realistic-ag.js';
import { healthyStatus, stuckStatus, type AgShape } from './ag-states.js';
import { makeArtifactGenerator, makePackageSource, type PackageSourceOwner } from './apiserver.js';

const MERGE_PATCH = 'application/merge-patch+json';

const COMPACT_SPEC = {
  sources: [{ alias: 'src', kind: 'OCIRepository', name: 'cozystack-packages' }],
  artifacts: [{ name: 'chart', copy: [{ from: '@src/**', to: '@artifact/' }] }],
};

export interface RawKube {
  createPackageSource(name: string): Promise<PackageSource>;
  /**
   * Creates an AG, optionally owned by a PackageSource: with the realistic fixture's spec (two
   * sources, eleven artifacts), or a compact one (one source, one artifact).
   */
  createAg(
    namespace: string,
    name: string,
    owner?: PackageSourceOwner,
    shape?: Exclude<AgShape, 'minimal'>,
  ): Promise<ArtifactGenerator>;
  patchAgStatus(
    namespace: string,
    name: string,
    status: ArtifactGeneratorStatus,
  ): Promise<ArtifactGenerator>;
  getAg(namespace: string, name: string): Promise<ArtifactGenerator>;
  getPackageSource(name: string): Promise<PackageSource>;
  /** Deletes every AG in the namespace (one deletecollection call). */
  deleteAllAgs(namespace: string): Promise<void>;
  deletePackageSource(name: string): Promise<void>;
  /** Deletes every PackageSource (one deletecollection call). */
  deleteAllPackageSources(): Promise<void>;
}

export function createRawKube(kc: KubeConfig): RawKube {
  const send: Send = createTransport(kc, 30_000);
  // A deletecollection of thousands of AGs takes the API server minutes on a loaded machine.
  const sendSlow: Send = createTransport(kc, 600_000);
  const call = async <T>(
    req: HttpRequest,
    okStatuses: number[] = [200, 201],
    via: Send = send,
  ): Promise<T> => {
    const out = await via(req);
    if (out.kind !== 'response') {
      throw new Error(`${req.method} ${req.path}: ${out.kind} failure`);
    }
    if (!okStatuses.includes(out.statusCode)) {
      throw new Error(
        `${req.method} ${req.path}: HTTP ${out.statusCode} ${out.body.slice(0, 500)}`,
      );
    }
    return (out.body === '' ? {} : JSON.parse(out.body)) as T;
  };
  const agBase = (ns: string): string => `/apis/${AG_API_VERSION}/namespaces/${ns}/${AG_PLURAL}`;
  const psBase = `/apis/${PS_API_VERSION}/${PS_PLURAL}`;
  const fixture = loadRealisticAg();
  // The real kube-apiserver refuses objects in a namespace that does not exist (NamespaceLifecycle
  // admission): each namespace is created once, on its first AG (409: it already exists).
  const namespaces = new Map<string, Promise<unknown>>();
  const ensureNamespace = (name: string): Promise<unknown> => {
    let created = namespaces.get(name);
    if (created === undefined) {
      created = call<unknown>(
        {
          method: 'POST',
          path: '/api/v1/namespaces',
          body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
        },
        [201, 409],
      );
      namespaces.set(name, created);
    }
    return created;
  };

  return {
    createPackageSource: (name) =>
      call({ method: 'POST', path: psBase, body: makePackageSource({ name }) }),
    createAg: async (namespace, name, owner, shape = 'realistic') => {
      await ensureNamespace(namespace);
      const ag = makeArtifactGenerator({ name, namespace, ...(owner !== undefined && { owner }) });
      return call({
        method: 'POST',
        path: agBase(namespace),
        body: { ...ag, spec: shape === 'compact' ? COMPACT_SPEC : fixture.spec },
      });
    },
    patchAgStatus: (namespace, name, status) =>
      call({
        method: 'PATCH',
        path: `${agBase(namespace)}/${name}/status`,
        contentType: MERGE_PATCH,
        body: { status },
      }),
    getAg: (namespace, name) => call({ method: 'GET', path: `${agBase(namespace)}/${name}` }),
    getPackageSource: (name) => call({ method: 'GET', path: `${psBase}/${name}` }),
    deleteAllAgs: async (namespace) => {
      await call({ method: 'DELETE', path: agBase(namespace) }, [200], sendSlow);
    },
    deletePackageSource: async (name) => {
      await call({ method: 'DELETE', path: `${psBase}/${name}` }, [200, 202, 404]);
    },
    deleteAllPackageSources: async () => {
      await call({ method: 'DELETE', path: psBase });
    },
  };
}

/** Runs `task` over `items` with at most `limit` in flight. */
export async function pool<T>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await task(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Creates the PackageSource `name` and returns it as an AG's owner. */
export async function createOwner(raw: RawKube, name: string): Promise<PackageSourceOwner> {
  const ps = await raw.createPackageSource(name);
  return { name, uid: ps.metadata?.uid ?? '' };
}

/** Creates an AG of `shape` and gives it the status `statusOf` makes for its generation. */
async function createAgInState(
  raw: RawKube,
  namespace: string,
  name: string,
  owner: PackageSourceOwner | undefined,
  shape: Exclude<AgShape, 'minimal'>,
  statusOf: (generation: number) => ArtifactGeneratorStatus,
): Promise<ArtifactGenerator> {
  const created = await raw.createAg(namespace, name, owner, shape);
  return raw.patchAgStatus(namespace, name, statusOf(created.metadata?.generation ?? 1));
}

/**
 * Creates the compact AGs `names` in `namespace`, `concurrency` at a time, each healthy (Ready=True
 * since `at`) and owned by what `ownerOf` makes for it, if anything.
 */
export async function createHealthyAgs(
  raw: RawKube,
  namespace: string,
  names: readonly string[],
  concurrency: number,
  ownerOf: (name: string) => Promise<PackageSourceOwner | undefined> = () =>
    Promise.resolve(undefined),
  at: number = Date.now(),
): Promise<void> {
  await pool(names, concurrency, async (name) => {
    await createAgInState(raw, namespace, name, await ownerOf(name), 'compact', (generation) =>
      healthyStatus(at, generation, 'compact'),
    );
  });
}

/**
 * A realistic AG (the fixture's eleven inventory entries), Ready=True now on its generation,
 * optionally owned by a PackageSource of the same name, read back as the API server serves it:
 * the one the throughput and API-cost benches send events about.
 */
export async function createHealthyAg(
  raw: RawKube,
  namespace: string,
  name: string,
  { owned }: { owned: boolean },
): Promise<ArtifactGenerator> {
  const owner = owned ? await createOwner(raw, name) : undefined;
  await createAgInState(raw, namespace, name, owner, 'realistic', (generation) =>
    healthyStatus(Date.now(), generation, 'realistic'),
  );
  return raw.getAg(namespace, name);
}

/** Creates a realistic AG, optionally owned, stuck (fluxcd/pkg#934) since `since`. */
export function createStuckAg(
  raw: RawKube,
  namespace: string,
  name: string,
  since: number,
  owner?: PackageSourceOwner,
): Promise<ArtifactGenerator> {
  return createAgInState(raw, namespace, name, owner, 'realistic', (generation) =>
    stuckStatus(since, generation, 'realistic'),
  );
}
