// List-then-watch of one custom resource, the way a client-go reflector does it: list, watch from
// the list's resourceVersion, resume the watch from the last seen resourceVersion when the server
// closes it, and re-list only when the server says the version is gone (410). It remembers the
// resourceVersion of every object it has seen, so `waitCaughtUp()` can tell, by comparing with a
// fresh list, that every change made so far has been delivered to the handlers.

import { CustomObjectsApi, Watch } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { sleep } from './pending.js';

export interface ResourceRef {
  group: string;
  version: string;
  plural: string;
  /** Watch one namespace; all namespaces when absent. */
  namespace?: string;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; [k: string]: unknown };
  [k: string]: unknown;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface ListWatchHandlers {
  /** A watch event (never called for the objects an initial or re-list returns). */
  onEvent(type: WatchEventType, obj: KubeObject): void;
  /** The full state after a (re-)list. */
  onList?(items: KubeObject[]): void;
}

export interface ListWatchOptions {
  log?: (msg: string, fields: Record<string, unknown>) => void;
}

/** A version some client stored (see WrittenObject in test/support/kube-proxy.ts). */
export interface StoredVersion {
  namespace: string;
  name: string;
  resourceVersion: string;
  /** The write deleted the object: its deletion must be seen. */
  gone: boolean;
}

/**
 * How a source or watch makes sure it delivered every change made so far: by default a fresh
 * list compared with what it saw (ListWatch.waitCaughtUp); the system passes a cheaper one that
 * waits only for the versions its proxy saw stored (ListWatch.waitSeen).
 */
export type CatchUp = (watch: ListWatch, timeoutMs: number) => Promise<void>;

export const listCatchUp: CatchUp = (watch, timeoutMs) => watch.waitCaughtUp(timeoutMs);

export function objectKey(obj: KubeObject): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

export class ListWatch {
  readonly #kc: KubeConfig;
  readonly #ref: ResourceRef;
  readonly #handlers: ListWatchHandlers;
  readonly #opts: ListWatchOptions;
  readonly #api: CustomObjectsApi;
  /** key -> resourceVersion of every live object as last seen. */
  readonly #seen = new Map<string, string>();
  /** key -> resourceVersion of the deletion, for objects whose deletion was seen. */
  readonly #deleted = new Map<string, string>();
  #resourceVersion = '';
  #controller: AbortController | undefined;
  #stopped = true;
  #loop: Promise<void> | undefined;
  /** Watch events received so far. */
  events = 0;

  constructor(
    kc: KubeConfig,
    ref: ResourceRef,
    handlers: ListWatchHandlers,
    opts: ListWatchOptions = {},
  ) {
    this.#kc = kc;
    this.#ref = ref;
    this.#handlers = handlers;
    this.#opts = opts;
    this.#api = kc.makeApiClient(CustomObjectsApi);
  }

  get path(): string {
    const { group, version, plural, namespace } = this.#ref;
    return namespace
      ? `/apis/${group}/${version}/namespaces/${namespace}/${plural}`
      : `/apis/${group}/${version}/${plural}`;
  }

  /** The watched resource (plural) and its namespace, when it watches one. */
  get resource(): Readonly<ResourceRef> {
    return this.#ref;
  }

  /** Lists (silently) and has the watch established when it resolves. Throws if either fails. */
  async start(): Promise<void> {
    if (!this.#stopped) return;
    this.#stopped = false;
    try {
      await this.#relist();
      const first = await this.#watchOnce();
      if (first.failed) {
        throw new Error(`watch of ${this.path} failed: ${describe(await first.ended)}`);
      }
      this.#loop = this.#run(first.ended);
    } catch (e) {
      this.#stopped = true;
      throw e;
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#controller?.abort();
    this.#controller = undefined;
    await this.#loop;
  }

  /** A fresh list of all objects (every page) and the list's resourceVersion. */
  async list(): Promise<{ items: KubeObject[]; resourceVersion: string }> {
    const items: KubeObject[] = [];
    let cont: string | undefined;
    let resourceVersion = '';
    do {
      const base = { group: this.#ref.group, version: this.#ref.version, plural: this.#ref.plural };
      const page = (await (this.#ref.namespace
        ? this.#api.listNamespacedCustomObject({
            ...base,
            namespace: this.#ref.namespace,
            limit: 500,
            ...(cont ? { _continue: cont } : {}),
          })
        : this.#api.listClusterCustomObject({
            ...base,
            limit: 500,
            ...(cont ? { _continue: cont } : {}),
          }))) as {
        items?: KubeObject[];
        metadata?: { continue?: string; resourceVersion?: string };
      };
      items.push(...(page.items ?? []));
      cont = page.metadata?.continue || undefined;
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
    } while (cont);
    return { items, resourceVersion };
  }

  /**
   * Resolves once the handlers have seen every object in a fresh list at its listed
   * resourceVersion, and the deletion of every object the list no longer has.
   */
  async waitCaughtUp(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { items, resourceVersion } = await this.list();
      if (this.#matches(items, resourceVersion)) return;
      if (Date.now() > deadline) {
        throw new Error(`watch of ${this.path} did not catch up within ${timeoutMs} ms`);
      }
      await sleep(10);
    }
  }

  /**
   * Resolves once the watch delivered each of these stored versions (or a later one, or the
   * object's later deletion); a deleting write needs its deletion seen. No request is made:
   * it costs as much as the versions given, not as the world. Versions outside the watched
   * namespace are ignored.
   */
  async waitSeen(versions: readonly StoredVersion[], timeoutMs = 10_000): Promise<void> {
    const ns = this.#ref.namespace;
    let left = versions.filter((v) => ns === undefined || v.namespace === ns);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      left = left.filter((v) => !this.#hasSeen(v));
      if (left.length === 0) return;
      if (Date.now() > deadline) {
        throw new Error(
          `watch of ${this.path} did not deliver ${left.length} stored version(s) within ${timeoutMs} ms`,
        );
      }
      await sleep(5);
    }
  }

  #hasSeen(v: StoredVersion): boolean {
    const key = `${v.namespace}/${v.name}`;
    const seen = this.#seen.get(key);
    const deleted = this.#deleted.get(key);
    if (v.gone) {
      return atLeast(deleted, v.resourceVersion) || atLeast(seen, v.resourceVersion, true);
    }
    return atLeast(seen, v.resourceVersion) || atLeast(deleted, v.resourceVersion);
  }

  /**
   * The watch has caught up with a list taken at `listRv` when every listed object was seen at
   * its listed version or later (or its later deletion was seen), and every object seen but not
   * listed was created after the list. Later changes are allowed: under concurrent writes the
   * watch may be ahead of the list.
   */
  #matches(items: KubeObject[], listRv: string): boolean {
    const listed = new Set<string>();
    for (const o of items) {
      const key = objectKey(o);
      listed.add(key);
      const rv = o.metadata?.resourceVersion ?? '';
      const seen = this.#seen.get(key);
      if (seen !== undefined ? !atLeast(seen, rv) : !atLeast(this.#deleted.get(key), rv, true)) {
        return false;
      }
    }
    for (const [key, rv] of this.#seen) {
      if (!listed.has(key) && !atLeast(rv, listRv, true)) return false;
    }
    return true;
  }

  async #relist(): Promise<void> {
    const { items, resourceVersion } = await this.list();
    this.#seen.clear();
    this.#deleted.clear();
    for (const o of items) this.#seen.set(objectKey(o), o.metadata?.resourceVersion ?? '');
    this.#resourceVersion = resourceVersion;
    this.#handlers.onList?.(items);
  }

  /** Opens one watch. `failed`: the request was refused; `ended` settles when the watch ends. */
  async #watchOnce(): Promise<{ failed: boolean; ended: Promise<unknown> }> {
    let finish!: (outcome: unknown) => void;
    const ended = new Promise<unknown>((resolve) => (finish = resolve));
    let gone = false;
    const controller = await new Watch(this.#kc).watch(
      this.path,
      { resourceVersion: this.#resourceVersion, allowWatchBookmarks: true },
      (type: string, obj: KubeObject) => {
        if (type === 'ERROR') {
          const code = (obj as { code?: number }).code;
          if (code === 410) gone = true;
          this.#opts.log?.('watch error event', { path: this.path, code });
          return;
        }
        const rv = obj.metadata?.resourceVersion;
        if (rv) this.#resourceVersion = rv;
        if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return; // BOOKMARK
        this.events += 1;
        const key = objectKey(obj);
        if (type === 'DELETED') {
          this.#seen.delete(key);
          this.#deleted.set(key, rv ?? '');
        } else {
          this.#seen.set(key, rv ?? '');
          this.#deleted.delete(key);
        }
        this.#handlers.onEvent(type, obj);
      },
      (err: unknown) => finish(err ?? (gone ? GONE : null)),
    );
    this.#controller = controller;
    if (this.#stopped) controller.abort();
    return { failed: controller.signal.aborted && !this.#stopped, ended };
  }

  async #run(ended: Promise<unknown>): Promise<void> {
    let outcome = await ended;
    while (!this.#stopped) {
      const gone = outcome === GONE || isGone(outcome);
      if (outcome !== null && !gone) {
        this.#opts.log?.('watch ended with error', { path: this.path, error: describe(outcome) });
      }
      await sleep(outcome === null || gone ? 10 : RESTART_DELAY_MS);
      if (this.#stopped) return;
      try {
        if (gone) await this.#relist();
        const w = await this.#watchOnce();
        outcome = await w.ended;
      } catch (e) {
        outcome = e;
      }
    }
  }
}

const GONE = Symbol('gone');
/** Real ms before re-establishing a failed watch. */
const RESTART_DELAY_MS = 200;

/**
 * Whether resourceVersion `a` is at or after `b` (strictly after with `strict`). Kubernetes
 * resource versions are etcd revisions: decimal integers, compared numerically; anything else
 * only compares equal.
 */
function atLeast(a: string | undefined, b: string, strict = false): boolean {
  if (a === undefined) return false;
  if (/^\d+$/.test(a) && /^\d+$/.test(b)) {
    const d = BigInt(a) - BigInt(b);
    return strict ? d > 0n : d >= 0n;
  }
  return !strict && a === b;
}

function isGone(err: unknown): boolean {
  return (
    typeof err === 'object' && err !== null && (err as { statusCode?: number }).statusCode === 410
  );
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'symbol') return err.toString();
  return typeof err === 'string' ? err : JSON.stringify(err);
}
