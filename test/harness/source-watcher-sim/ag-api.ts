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
const AG_RESOURCE = { group: GROUP, version: VERSION, plural: PLURAL };

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

/** One request to a single ArtifactGenerator, as the request hook sees it. */
export interface AgApiRequest {
  verb: 'get' | 'patch';
  namespace: string;
  name: string;
  /** 'status' for the status subresource, '' for the main resource. */
  subresource: '' | 'status';
  /** The merge-patch body as sent (patches only). */
  body?: object;
  /** 200 on success, else the HTTP status of the error (undefined: no HTTP answer). */
  code: number | undefined;
  /** A request the fault injection answered itself: it never reached the API server. */
  lost: boolean;
}

export type AgApiRequestHook = (request: AgApiRequest) => void;

export class AgApi {
  readonly #api: CustomObjectsApi;
  readonly #watch: Watch;
  readonly #onRequest: AgApiRequestHook | undefined;

  constructor(kubeConfig: KubeConfig, onRequest?: AgApiRequestHook) {
    this.#api = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#watch = new Watch(kubeConfig);
    this.#onRequest = onRequest;
  }

  /** Run one request and report it to the hook (after the answer, with its status). */
  async #send<T>(request: Omit<AgApiRequest, 'code' | 'lost'>, run: () => Promise<T>): Promise<T> {
    if (!this.#onRequest) return run();
    try {
      const out = await run();
      this.#onRequest({ ...request, code: 200, lost: false });
      return out;
    } catch (e) {
      this.#onRequest({ ...request, code: httpStatusOf(e), lost: false });
      throw e;
    }
  }

  /**
   * Report a status patch the fault injection dropped (answered 500 "etcdserver: request timed
   * out" before it reached the API server, like the fault proxy in the recorded traces).
   */
  reportLost(namespace: string, name: string, body: object): void {
    this.#onRequest?.({
      verb: 'patch',
      namespace,
      name,
      subresource: 'status',
      body,
      code: 500,
      lost: true,
    });
  }

  /** The AG, or undefined when it does not exist. */
  async get(namespace: string, name: string): Promise<SimAg | undefined> {
    try {
      const obj: unknown = await this.#send({ verb: 'get', namespace, name, subresource: '' }, () =>
        this.#api.getNamespacedCustomObject({
          ...AG_RESOURCE,
          namespace,
          name,
        }),
      );
      return asAg(obj);
    } catch (e) {
      if (httpStatusOf(e) === 404) return undefined;
      throw e;
    }
  }

  async list(namespace: string | undefined): Promise<AgList> {
    const res: unknown =
      namespace === undefined
        ? await this.#api.listClusterCustomObject(AG_RESOURCE)
        : await this.#api.listNamespacedCustomObject({ ...AG_RESOURCE, namespace });
    const body = res as { items?: unknown[]; metadata?: { resourceVersion?: string } };
    const items = (body.items ?? []).map(asAg).filter((ag): ag is SimAg => ag !== undefined);
    return { items, resourceVersion: body.metadata?.resourceVersion ?? '' };
  }

  /** Merge patch of the main resource (metadata, spec). */
  patch(namespace: string, name: string, body: object): Promise<SimAg | undefined> {
    return this.#mergePatch(namespace, name, '', body);
  }

  /** Merge patch through the status subresource. */
  patchStatus(namespace: string, name: string, body: object): Promise<SimAg | undefined> {
    return this.#mergePatch(namespace, name, 'status', body);
  }

  async #mergePatch(
    namespace: string,
    name: string,
    subresource: '' | 'status',
    body: object,
  ): Promise<SimAg | undefined> {
    const request = {
      ...AG_RESOURCE,
      namespace,
      name,
      body,
      fieldManager: FIELD_MANAGER,
    };
    const obj: unknown = await this.#send(
      { verb: 'patch', namespace, name, subresource, body },
      () =>
        subresource === 'status'
          ? this.#api.patchNamespacedCustomObjectStatus(request, mergePatch)
          : this.#api.patchNamespacedCustomObject(request, mergePatch),
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
