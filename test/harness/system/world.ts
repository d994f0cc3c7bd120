// The harness's own view of the cluster, straight from the API server (not through the recording
// proxy, so it never shows up in the functions' call counts and no injected fault touches it):
// watches of ArtifactGenerators and PackageSources that feed the progress log, and small reads
// the scenarios use to assert the state of the world.

import { ApiException, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { AG_RESOURCE as AG } from '../knative/apiserver-source.js';
import { ListWatch, listCatchUp, type CatchUp, type KubeObject } from '../knative/list-watch.js';
import type { Condition } from '../../../shared/core/objects/types.js';
import type { ProgressLog } from './progress.js';
import { agKeyOf } from './progress.js';

export const RECOVERY_NAMESPACE = 'source-watcher-recovery';
export const ALARM_NAME = 'recovery-alarm';

const PS = { group: 'cozystack.io', version: 'v1alpha1', plural: 'packagesources' };
const PING = { group: 'sources.knative.dev', version: 'v1', plural: 'pingsources' };

export interface AgRefLike {
  namespace: string;
  name: string;
}

/** Watches AGs and PackageSources and hands every version to the progress log. */
export class WorldWatch {
  readonly #ags: ListWatch;
  readonly #packageSources: ListWatch;
  /** `namespace/name` -> current resourceVersion of every live AG. */
  readonly #agVersions = new Map<string, string>();

  constructor(kubeConfig: KubeConfig, progress: ProgressLog, now: () => number) {
    this.#ags = new ListWatch(kubeConfig, AG, {
      onList: (items) => {
        for (const o of items) {
          this.#agVersions.set(agKeyOf(o), o.metadata?.resourceVersion ?? '');
          progress.onAg(o, now(), 'listed');
        }
      },
      onEvent: (type, o) => {
        const key = agKeyOf(o);
        if (type === 'DELETED') this.#agVersions.delete(key);
        else this.#agVersions.set(key, o.metadata?.resourceVersion ?? '');
        progress.onAg(o, now(), type === 'DELETED' ? 'deleted' : 'changed');
      },
    });
    this.#packageSources = new ListWatch(kubeConfig, PS, {
      onList: (items) => {
        for (const o of items) progress.onPackageSource(o, now());
      },
      onEvent: (type, o) => {
        if (type !== 'DELETED') progress.onPackageSource(o, now());
      },
    });
  }

  async start(): Promise<void> {
    await this.#ags.start();
    await this.#packageSources.start();
  }

  async stop(): Promise<void> {
    await this.#ags.stop();
    await this.#packageSources.stop();
  }

  /** Watch events received so far (for settling). */
  get events(): number {
    return this.#ags.events + this.#packageSources.events;
  }

  /** Resolves once both watches delivered every change a fresh list shows. */
  async caughtUp(timeoutMs: number, how: CatchUp = listCatchUp): Promise<void> {
    await how(this.#ags, timeoutMs);
    await how(this.#packageSources, timeoutMs);
  }

  /** The current resourceVersion of every live AG, as last delivered. */
  agResourceVersions(): ReadonlyMap<string, string> {
    return this.#agVersions;
  }
}

// ---- direct reads and writes ---------------------------------------------------------------

// The core's tolerant Condition shape: the world reads conditions as the functions do.
export type { Condition };

export interface AgObject extends KubeObject {
  metadata: {
    name: string;
    namespace: string;
    resourceVersion?: string;
    generation?: number;
    annotations?: Record<string, string>;
    finalizers?: string[];
    deletionTimestamp?: string;
  };
  spec?: Record<string, unknown>;
  status?: {
    conditions?: Condition[];
    inventory?: unknown[];
    observedSourcesDigest?: string;
    lastHandledReconcileAt?: string;
  };
}

export interface PackageSourceObject extends KubeObject {
  metadata: { name: string; generation?: number; resourceVersion?: string };
  status?: { conditions?: Condition[] };
}

function api(kc: KubeConfig): CustomObjectsApi {
  return kc.makeApiClient(CustomObjectsApi);
}

function isNotFound(e: unknown): boolean {
  return e instanceof ApiException && e.code === 404;
}

export function readyCondition(obj: { status?: { conditions?: Condition[] } } | undefined) {
  return obj?.status?.conditions?.find((c) => c.type === 'Ready');
}

/** The AG, or undefined when it does not exist. */
export async function readAg(kc: KubeConfig, ref: AgRefLike): Promise<AgObject | undefined> {
  try {
    return (await api(kc).getNamespacedCustomObject({ ...AG, ...ref })) as AgObject;
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** The PackageSource, or undefined when it does not exist. */
export async function readPackageSource(
  kc: KubeConfig,
  name: string,
): Promise<PackageSourceObject | undefined> {
  try {
    return (await api(kc).getClusterCustomObject({ ...PS, name })) as PackageSourceObject;
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** The follow-up alarm PingSource, or undefined when there is none. */
export async function readAlarm(
  kc: KubeConfig,
  namespace: string = RECOVERY_NAMESPACE,
): Promise<
  { metadata: { annotations?: Record<string, string> }; spec: { schedule: string } } | undefined
> {
  try {
    return (await api(kc).getNamespacedCustomObject({
      ...PING,
      namespace,
      name: ALARM_NAME,
    })) as { metadata: { annotations?: Record<string, string> }; spec: { schedule: string } };
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

export async function deleteAlarm(
  kc: KubeConfig,
  namespace: string = RECOVERY_NAMESPACE,
): Promise<void> {
  try {
    await api(kc).deleteNamespacedCustomObject({
      ...PING,
      namespace,
      name: ALARM_NAME,
    });
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}

/** Deletes the AG (without waiting for finalizers); already gone is fine. */
export async function deleteAg(kc: KubeConfig, ref: AgRefLike): Promise<void> {
  try {
    await api(kc).deleteNamespacedCustomObject({ ...AG, ...ref });
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}
