// List-then-watch of one custom resource, the way a client-go reflector does it: list, watch from
// the list's resourceVersion, resume the watch from the last seen resourceVersion when the server
// closes it, and re-list when the server says the version is gone (410) or refuses the watch
// (other than 429). Failures back off as the reflector's backoff manager does (800 ms doubling
// to 30 s, jitter up to as much again, reset after 2 quiet minutes), on the given clock: a 429 on
// a watch, a failed list, a 410, a refused watch; a clean end of the stream re-watches at once
// (docs/adr/0060-event-path-storm.md). It remembers the resourceVersion of every object it has
// seen, so `waitCaughtUp()` can tell, by comparing with a fresh list, that every change made so
// far has been delivered to the handlers (or covered by a re-list).

import { CustomObjectsApi, Watch } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import type { EmuClock } from './clock.js';
import { sleep } from './pending.js';
import { seededRng, type Rng } from '../rng.js';

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
  /**
   * The reflector's backoff waits on this clock (the emulation's virtual clock). Without one the
   * watch restarts after 200 real ms and never backs off (the harness's own watches).
   */
  clock?: EmuClock;
  /** Seed of the backoff's jitter (default 1). */
  seed?: number;
  /**
   * The client of the catch-up lists (`waitCaughtUp`): the harness's own reads, which must not
   * pass for the adapter's (nor meet its faults). Default: the watch's own client.
   */
  catchUpKubeConfig?: KubeConfig;
}

/**
 * What the reflector is doing: listing, connecting a watch, streaming one, or waiting out a
 * backoff on its clock.
 */
export type ListWatchPhase = 'stopped' | 'listing' | 'connecting' | 'streaming' | 'backoff';

/** client-go's reflector backoff: wait.NewExponentialBackoffManager(800ms, 30s, 2m, 2.0, 1.0). */
export const REFLECTOR_BACKOFF = {
  initialMs: 800,
  maxMs: 30_000,
  resetAfterMs: 2 * 60_000,
  factor: 2,
  jitter: 1,
} as const;

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
export type CatchUp = (watch: ListWatch, timeoutMs: number) => Promise<boolean>;

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
  readonly #catchUpApi: CustomObjectsApi;
  readonly #rng: Rng;
  /** key -> resourceVersion of every live object as last seen. */
  readonly #seen = new Map<string, string>();
  /** key -> resourceVersion of the deletion, for objects whose deletion was seen. */
  readonly #deleted = new Map<string, string>();
  #resourceVersion = '';
  /** The resourceVersion of the last (re-)list: every change up to it is covered. */
  #listRv = '';
  #phase: ListWatchPhase = 'stopped';
  #backoffMs = 0;
  #lastBackoffAt = -Infinity;
  #wake: (() => void) | undefined;
  #controller: AbortController | undefined;
  #stopped = true;
  #loop: Promise<void> | undefined;
  /** Watch events received so far. */
  events = 0;
  /** Re-lists after the start (410 Gone, a refused watch, a failed list), and backoffs waited. */
  relists = 0;
  backoffs = 0;

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
    this.#catchUpApi = (opts.catchUpKubeConfig ?? kc).makeApiClient(CustomObjectsApi);
    this.#rng = seededRng(opts.seed ?? 1);
  }

  get phase(): ListWatchPhase {
    return this.#phase;
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
      this.#phase = 'listing';
      await this.#relist();
      this.#phase = 'connecting';
      const first = await this.#watchOnce();
      if (first.failed) {
        throw new Error(`watch of ${this.path} failed: ${describe(await first.ended)}`);
      }
      this.#loop = this.#run(first.ended);
    } catch (e) {
      this.#stopped = true;
      this.#phase = 'stopped';
      throw e;
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#controller?.abort();
    this.#controller = undefined;
    this.#wake?.();
    await this.#loop;
    this.#phase = 'stopped';
  }

  /** A fresh list of all objects (every page) and the list's resourceVersion, by the adapter. */
  list(): Promise<{ items: KubeObject[]; resourceVersion: string }> {
    return this.#listWith(this.#api);
  }

  async #listWith(
    api: CustomObjectsApi,
  ): Promise<{ items: KubeObject[]; resourceVersion: string }> {
    const items: KubeObject[] = [];
    let cont: string | undefined;
    let resourceVersion = '';
    do {
      const base = { group: this.#ref.group, version: this.#ref.version, plural: this.#ref.plural };
      const page = (await (this.#ref.namespace
        ? api.listNamespacedCustomObject({
            ...base,
            namespace: this.#ref.namespace,
            limit: 500,
            ...(cont ? { _continue: cont } : {}),
          })
        : api.listClusterCustomObject({
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
   * Resolves true once the handlers have seen every object in a fresh list (by the catch-up
   * client) at its listed resourceVersion, and the deletion of every object the list no longer
   * has; false, at once, when the reflector waits on its clock (a backoff) or `blocked()` says
   * its request waits there (a call the storm holds): it cannot catch up before the clock moves.
   */
  async waitCaughtUp(timeoutMs = 10_000, blocked?: () => boolean): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.#waitsOnClock(blocked)) return false;
      const { items, resourceVersion } = await this.#listWith(this.#catchUpApi);
      if (this.#matches(items, resourceVersion)) return true;
      if (this.#waitsOnClock(blocked)) return false;
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
   * namespace are ignored. Resolves false, as waitCaughtUp does, when the reflector waits on
   * its clock.
   */
  async waitSeen(
    versions: readonly StoredVersion[],
    timeoutMs = 10_000,
    blocked?: () => boolean,
  ): Promise<boolean> {
    const ns = this.#ref.namespace;
    let left = versions.filter((v) => ns === undefined || v.namespace === ns);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      left = left.filter((v) => !this.#hasSeen(v));
      if (left.length === 0) return true;
      if (this.#waitsOnClock(blocked)) return false;
      if (Date.now() > deadline) {
        throw new Error(
          `watch of ${this.path} did not deliver ${left.length} stored version(s) within ${timeoutMs} ms`,
        );
      }
      await sleep(5);
    }
  }

  #waitsOnClock(blocked: (() => boolean) | undefined): boolean {
    if (this.#phase === 'backoff') return true;
    return (this.#phase === 'listing' || this.#phase === 'connecting') && blocked?.() === true;
  }

  #hasSeen(v: StoredVersion): boolean {
    // A re-list at or after the version covers it (its changes were never sent as events).
    if (atLeast(this.#listRv, v.resourceVersion)) return true;
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
    this.#listRv = resourceVersion;
    this.#handlers.onList?.(items);
  }

  /** Opens one watch. `failed`: the request was refused; `ended` settles when the watch ends. */
  async #watchOnce(): Promise<{ failed: boolean; ended: Promise<unknown> }> {
    let finish!: (outcome: unknown) => void;
    const ended = new Promise<unknown>((resolve) => (finish = resolve));
    let errorCode: number | undefined;
    const watch = new Watch(this.#kc);
    // On a virtual clock a held connect or a quiet stream waits for virtual time, which costs any
    // amount of real time: client-node's 30 s real-time connect and inactivity timeout would fire
    // on the harness's slowness (client-go has neither).
    if (this.#opts.clock !== undefined) {
      (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = 10 * 60_000;
    }
    const controller = await watch.watch(
      this.path,
      { resourceVersion: this.#resourceVersion, allowWatchBookmarks: true },
      (type: string, obj: KubeObject) => {
        if (type === 'ERROR') {
          errorCode = (obj as { code?: number }).code;
          this.#opts.log?.('watch error event', { path: this.path, code: errorCode });
          return;
        }
        this.#phase = 'streaming';
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
      (err: unknown) =>
        finish(err ?? (errorCode === 410 ? GONE : errorCode !== undefined ? { errorCode } : null)),
    );
    this.#controller = controller;
    if (this.#stopped) controller.abort();
    else if (!controller.signal.aborted) this.#phase = 'streaming';
    return { failed: controller.signal.aborted && !this.#stopped, ended };
  }

  async #run(ended: Promise<unknown>): Promise<void> {
    let outcome = await ended;
    while (!this.#stopped) {
      const next = nextStep(outcome);
      if (next.log) {
        this.#opts.log?.('watch ended with error', { path: this.path, error: describe(outcome) });
      }
      if (this.#opts.clock === undefined) {
        // The harness's own watches: restart soon, re-list only on 410.
        await sleep(next.step === 'rewatch' ? 10 : RESTART_DELAY_MS);
        if (this.#stopped) return;
        const listFailed =
          typeof outcome === 'object' && outcome !== null && 'listFailed' in outcome;
        outcome = await this.#attempt(outcome === GONE || isGone(outcome) || listFailed);
        continue;
      }
      if (next.backoff) await this.#backOff(next.step === 'relist' ? 'listing' : 'connecting');
      if (this.#stopped) return;
      outcome = await this.#attempt(next.step === 'relist');
    }
  }

  /** One re-list (when asked) and watch; what ended it (a failed list ends it too). */
  async #attempt(relist: boolean): Promise<unknown> {
    try {
      if (relist) {
        this.#phase = 'listing';
        this.relists += 1;
        try {
          await this.#relist();
        } catch (e) {
          return { listFailed: e };
        }
      }
      this.#phase = 'connecting';
      const w = await this.#watchOnce();
      return await w.ended;
    } catch (e) {
      return e;
    }
  }

  /** Waits out the reflector's next backoff on the clock; `then` is the phase when it is over. */
  async #backOff(then: ListWatchPhase): Promise<void> {
    const clock = this.#opts.clock;
    if (clock === undefined) return;
    const b = REFLECTOR_BACKOFF;
    const now = clock.now();
    this.#backoffMs =
      now - this.#lastBackoffAt > b.resetAfterMs || this.#backoffMs === 0
        ? b.initialMs
        : Math.min(b.maxMs, this.#backoffMs * b.factor);
    this.#lastBackoffAt = now;
    const waitMs = Math.round(this.#backoffMs * (1 + b.jitter * this.#rng()));
    this.backoffs += 1;
    this.#phase = 'backoff';
    await new Promise<void>((resolve) => {
      const wake = (): void => {
        this.#wake = undefined;
        // Synchronously, so a settle right after the timer sees the reflector busy, not waiting.
        if (!this.#stopped) this.#phase = then;
        resolve();
      };
      this.#wake = wake;
      clock.setTimer(now + waitMs, wake);
    });
  }
}

/**
 * What the reflector does after a watch ended (client-go's Reflector.watch / ListAndWatch):
 * a clean end re-watches at once; 429 or a transport error backs off and re-watches; 410 Gone,
 * another refused watch or error event, and a failed list back off and re-list.
 */
function nextStep(outcome: unknown): {
  step: 'rewatch' | 'relist';
  backoff: boolean;
  log: boolean;
} {
  if (outcome === null) return { step: 'rewatch', backoff: false, log: false };
  if (outcome === GONE || isGone(outcome)) return { step: 'relist', backoff: true, log: false };
  if (typeof outcome === 'object' && outcome !== null) {
    if ('listFailed' in outcome || 'errorCode' in outcome) {
      return { step: 'relist', backoff: true, log: true };
    }
    const code = (outcome as { statusCode?: number }).statusCode;
    if (code === 429) return { step: 'rewatch', backoff: true, log: true };
    if (typeof code === 'number') return { step: 'relist', backoff: true, log: true };
  }
  return { step: 'rewatch', backoff: true, log: true };
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
  if (typeof err === 'object' && err !== null && 'listFailed' in err) {
    return `list failed: ${describe((err as { listFailed: unknown }).listFailed)}`;
  }
  if (typeof err === 'symbol') return err.toString();
  return typeof err === 'string' ? err : JSON.stringify(err);
}
