// The bench's own writer for the test API server: raw REST through the project's transport (one
// keep-alive agent, the kubeconfig's client certificate). It creates the objects the functions
// then read; the functions never use it.

import type { KubeConfig } from '@kubernetes/client-node';
import {
  AG_API_VERSION,
  AG_PLURAL,
  PS_API_VERSION,
  PS_PLURAL,
  type ArtifactGenerator,
  type ArtifactGeneratorStatus,
  type PackageSource,
} from '../../shared/core/types.js';
import { createTransport, type HttpRequest, type Send } from '../../shared/kube/transport.js';
import { loadRealisticAg } from './events.js';

const MERGE_PATCH = 'application/merge-patch+json';

export type AgShape = 'realistic' | 'compact';

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
    owner?: { name: string; uid: string },
    shape?: AgShape,
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
      call({
        method: 'POST',
        path: psBase,
        body: {
          apiVersion: PS_API_VERSION,
          kind: 'PackageSource',
          metadata: { name },
          spec: {
            sourceRef: {
              kind: 'OCIRepository',
              name: 'cozystack-packages',
              namespace: 'cozy-public',
            },
          },
        },
      }),
    createAg: async (namespace, name, owner, shape = 'realistic') => {
      await ensureNamespace(namespace);
      return call({
        method: 'POST',
        path: agBase(namespace),
        body: {
          apiVersion: AG_API_VERSION,
          kind: 'ArtifactGenerator',
          metadata: {
            name,
            namespace,
            ...(owner !== undefined
              ? {
                  labels: { 'cozystack.io/packagesource': owner.name },
                  ownerReferences: [
                    {
                      apiVersion: PS_API_VERSION,
                      kind: 'PackageSource',
                      name: owner.name,
                      uid: owner.uid,
                      controller: true,
                    },
                  ],
                }
              : {}),
          },
          spec: shape === 'compact' ? COMPACT_SPEC : fixture.spec,
        },
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

/**
 * A healthy status like source-watcher writes it: Ready=True on `generation`, outputs saved (the
 * fixture's eleven inventory entries, or the first one for a compact AG).
 */
export function healthyStatus(
  generation: number,
  at: string,
  shape: AgShape = 'realistic',
): ArtifactGeneratorStatus {
  const fixture = loadRealisticAg();
  const inventory = fixture.status?.inventory ?? [];
  const kept = shape === 'compact' ? inventory.slice(0, 1) : inventory;
  return {
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'Succeeded',
        message: `reconciliation succeeded, generated ${kept.length} artifact(s)`,
        lastTransitionTime: at,
        observedGeneration: generation,
      },
    ],
    inventory: kept,
    ...(fixture.status?.observedSourcesDigest !== undefined
      ? { observedSourcesDigest: fixture.status.observedSourcesDigest }
      : {}),
  };
}

/** The fluxcd/pkg#934 state: outputs saved, Ready left Unknown/Progressing since `at`. */
export function stuckStatus(generation: number, at: string): ArtifactGeneratorStatus {
  return {
    ...healthyStatus(generation, at),
    conditions: [
      {
        type: 'Ready',
        status: 'Unknown',
        reason: 'Progressing',
        message: 'Reconciliation in progress',
        lastTransitionTime: at,
        observedGeneration: generation,
      },
    ],
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

/** RFC 3339, seconds precision (the CRD's date-time format). */
export function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
