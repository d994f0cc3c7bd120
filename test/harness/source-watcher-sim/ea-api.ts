// source-watcher's writes of the ExternalArtifacts it generates (source.toolkit.fluxcd.io/v1),
// through @kubernetes/client-node 1.4, independent of the product's adapter. The object and its
// status are server-side applied as field manager `source-watcher`: the object with force (it is
// source-watcher's), the status without, so that a status.artifact.digest another field manager
// owns (left by `kubectl patch` or `kubectl edit`) makes the real API server answer 409 Conflict,
// the measured behaviour that fails the AG with ReconciliationFailed (docs/adr/0039). The object
// carries the generator label and `app.kubernetes.io/managed-by: source-watcher` (its controller
// name, reconcileExternalArtifact). They are listed in the AG's namespace, as
// detectExternalArtifactsDrift does (v2.1, v2.2). Nothing here watches ExternalArtifacts:
// source-watcher v2.1.0 does not (fluxcd/source-watcher#346).

import {
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import { httpStatusOf } from './ag-api.js';
import { FIELD_MANAGER, GROUP, VERSION } from './constants.js';
import type { SimInventoryEntry } from './types.js';

const EA_GROUP = 'source.toolkit.fluxcd.io';
const EA_VERSION = 'v1';
const EA_RESOURCE = { group: EA_GROUP, version: EA_VERSION, plural: 'externalartifacts' };
const GENERATOR_LABEL = 'source.extensions.fluxcd.io/generator';
const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';

const apply = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
/** apiVersion and kind of every object applied (server-side apply needs them in the body). */
const TYPE_META = { apiVersion: `${EA_GROUP}/${EA_VERSION}`, kind: 'ExternalArtifact' } as const;

export interface SimExternalArtifact {
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
  };
  status?: { artifact?: { digest?: string } };
}

/** The owner of the generated objects, as source-watcher names it. */
export interface Generator {
  namespace: string;
  name: string;
  uid: string;
}

/**
 * An ExternalArtifact apply that the API server refused, with the message source-watcher puts in
 * the AG's Ready condition for it (`fmt.Errorf` in reconcileExternalArtifact, then
 * "%s reconcile failed: %s" with the artifact's name in reconcile).
 */
export class EaApplyError extends Error {
  readonly code: number | undefined;
  constructor(step: 'apply' | 'apply-status', name: string, cause: unknown) {
    const what =
      step === 'apply'
        ? 'failed to apply ExternalArtifact'
        : 'failed to patchStatus ExternalArtifact status';
    super(`${name} reconcile failed: ${what}: ${apiMessageOf(cause)}`);
    this.code = httpStatusOf(cause);
  }
}

/** The API server's Status message (what client-go's error string is), else the error's own. */
function apiMessageOf(e: unknown): string {
  const body = (e as { body?: unknown } | null)?.body;
  if (typeof body === 'string') {
    try {
      const status = JSON.parse(body) as { message?: unknown };
      if (typeof status.message === 'string') return status.message;
    } catch {
      // not a Status
    }
  }
  return e instanceof Error ? e.message : String(e);
}

/** One ExternalArtifact write of the simulator, for tests that hold it to the order of writes. */
export interface EaWrite {
  verb: 'apply' | 'apply-status' | 'delete';
  namespace: string;
  name: string;
  code: number | undefined;
}

export class EaApi {
  readonly #api: CustomObjectsApi;
  readonly #onWrite: ((w: EaWrite) => void) | undefined;

  constructor(kubeConfig: KubeConfig, onWrite?: (w: EaWrite) => void) {
    this.#api = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#onWrite = onWrite;
  }

  async #send<T>(w: Omit<EaWrite, 'code'>, run: () => Promise<T>): Promise<T> {
    try {
      const out = await run();
      this.#onWrite?.({ ...w, code: 200 });
      return out;
    } catch (e) {
      this.#onWrite?.({ ...w, code: httpStatusOf(e) });
      throw e;
    }
  }

  /** The ExternalArtifacts in `namespace` labelled with the generator's uid (its cache). */
  async listFor(namespace: string, uid: string): Promise<SimExternalArtifact[]> {
    const res = (await this.#api.listNamespacedCustomObject({
      ...EA_RESOURCE,
      namespace,
      labelSelector: `${GENERATOR_LABEL}=${uid}`,
    })) as { items?: SimExternalArtifact[] };
    return res.items ?? [];
  }

  /** Applies the object, then its status.artifact. Throws an EaApplyError (409 on a conflict). */
  async applyEntry(
    gen: Generator,
    entry: SimInventoryEntry,
    revision: string,
    now: number,
  ): Promise<void> {
    const base = {
      ...EA_RESOURCE,
      namespace: entry.namespace,
      name: entry.name,
      fieldManager: FIELD_MANAGER,
    };
    const meta = { name: entry.name, namespace: entry.namespace };
    const step = async (which: 'apply' | 'apply-status', run: () => Promise<unknown>) => {
      try {
        await this.#send({ verb: which, ...meta }, run);
      } catch (e) {
        throw new EaApplyError(which, entry.name, e);
      }
    };
    await step('apply', () =>
      this.#api.patchNamespacedCustomObject(
        {
          ...base,
          force: true,
          body: {
            ...TYPE_META,
            metadata: {
              ...meta,
              labels: { [MANAGED_BY_LABEL]: FIELD_MANAGER, [GENERATOR_LABEL]: gen.uid },
            },
            spec: {
              sourceRef: {
                apiVersion: `${GROUP}/${VERSION}`,
                kind: 'ArtifactGenerator',
                name: gen.name,
                namespace: gen.namespace,
              },
            },
          },
        },
        apply,
      ),
    );
    await step('apply-status', () =>
      this.#api.patchNamespacedCustomObjectStatus(
        {
          ...base,
          force: false,
          body: {
            ...TYPE_META,
            metadata: meta,
            status: {
              artifact: {
                digest: entry.digest,
                revision,
                path: `externalartifact/${entry.namespace}/${entry.name}/${entry.filename}`,
                url: `http://source-watcher.flux-system.svc.cluster.local./externalartifact/${entry.namespace}/${entry.name}/${entry.filename}`,
                lastUpdateTime: new Date(Math.floor(now / 1000) * 1000)
                  .toISOString()
                  .replace('.000Z', 'Z'),
              },
            },
          },
        },
        apply,
      ),
    );
  }

  /** Garbage-collects a generated object no longer in the inventory; gone already is fine. */
  async remove(namespace: string, name: string): Promise<void> {
    try {
      await this.#send({ verb: 'delete', namespace, name }, () =>
        this.#api.deleteNamespacedCustomObject({
          ...EA_RESOURCE,
          namespace,
          name,
        }),
      );
    } catch (e) {
      if (httpStatusOf(e) !== 404) throw e;
    }
  }
}

/** source-watcher's rule: the labelled objects match the inventory in count, name, namespace, digest. */
export function externalArtifactsMatch(
  inventory: readonly SimInventoryEntry[],
  eas: readonly SimExternalArtifact[],
): boolean {
  if (inventory.length !== eas.length) return false;
  return inventory.every((entry) =>
    eas.some(
      (e) =>
        e.metadata.namespace === entry.namespace &&
        e.metadata.name === entry.name &&
        e.status?.artifact?.digest === entry.digest,
    ),
  );
}
