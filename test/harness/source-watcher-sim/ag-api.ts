// Raw access to ArtifactGenerators through @kubernetes/client-node 1.4 (CustomObjectsApi + Watch),
// independent of the product's adapter. Every patch is a JSON merge patch, sent with the explicit
// content type (client-node defaults to JSON patch).

import {
  ApiException,
  CustomObjectsApi,
  PatchStrategy,
  Watch,
  setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import { FIELD_MANAGER, GROUP, PLURAL, VERSION } from './constants.js';
import { asAg, type SimAg } from './types.js';

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** The HTTP status of an API error, if it has one. */
export function httpStatusOf(e: unknown): number | undefined {
  if (e instanceof ApiException) return e.code;
  const code = (e as { statusCode?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

export interface AgList {
  items: SimAg[];
  resourceVersion: string;
}

export type WatchHandler = (type: string, obj: unknown) => void;

export class AgApi {
  readonly #api: CustomObjectsApi;
  readonly #watch: Watch;

  constructor(kubeConfig: KubeConfig) {
    this.#api = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#watch = new Watch(kubeConfig);
  }

  /** The AG, or undefined when it does not exist. */
  async get(namespace: string, name: string): Promise<SimAg | undefined> {
    try {
      const obj: unknown = await this.#api.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        plural: PLURAL,
        namespace,
        name,
      });
      return asAg(obj);
    } catch (e) {
      if (httpStatusOf(e) === 404) return undefined;
      throw e;
    }
  }

  async list(namespace: string | undefined): Promise<AgList> {
    const base = { group: GROUP, version: VERSION, plural: PLURAL };
    const res: unknown =
      namespace === undefined
        ? await this.#api.listClusterCustomObject(base)
        : await this.#api.listNamespacedCustomObject({ ...base, namespace });
    const body = res as { items?: unknown[]; metadata?: { resourceVersion?: string } };
    const items = (body.items ?? []).map(asAg).filter((ag): ag is SimAg => ag !== undefined);
    return { items, resourceVersion: body.metadata?.resourceVersion ?? '' };
  }

  /** Merge patch of the main resource (metadata, spec). */
  async patch(namespace: string, name: string, body: object): Promise<SimAg | undefined> {
    const obj: unknown = await this.#api.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        plural: PLURAL,
        namespace,
        name,
        body,
        fieldManager: FIELD_MANAGER,
      },
      mergePatch,
    );
    return asAg(obj);
  }

  /** Merge patch through the status subresource. */
  async patchStatus(namespace: string, name: string, body: object): Promise<SimAg | undefined> {
    const obj: unknown = await this.#api.patchNamespacedCustomObjectStatus(
      {
        group: GROUP,
        version: VERSION,
        plural: PLURAL,
        namespace,
        name,
        body,
        fieldManager: FIELD_MANAGER,
      },
      mergePatch,
    );
    return asAg(obj);
  }

  /** Start a watch from resourceVersion; resolves once the stream is open. */
  watch(
    namespace: string | undefined,
    resourceVersion: string,
    onEvent: WatchHandler,
    onDone: (err: unknown) => void,
  ): Promise<AbortController> {
    const path =
      namespace === undefined
        ? `/apis/${GROUP}/${VERSION}/${PLURAL}`
        : `/apis/${GROUP}/${VERSION}/namespaces/${encodeURIComponent(namespace)}/${PLURAL}`;
    return this.#watch.watch(
      path,
      { resourceVersion, allowWatchBookmarks: true },
      (type, obj) => onEvent(type, obj),
      onDone,
    );
  }
}
