// List + watch of ArtifactGenerators with a cache, like a controller-runtime informer: list, then
// watch from the list's resourceVersion; re-watch from the last seen resourceVersion when the
// stream ends; relist on 410 Gone. Each change is handed to onChange with the previous cached
// object, so the caller can apply source-watcher's predicates. It also remembers which
// resourceVersions it delivered, so tests can wait until a given write was seen.

import { httpStatusOf, type AgApi } from './ag-api.js';
import { asAg, keyOf, type AgKey, type SimAg } from './types.js';

export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';
export type OnChange = (type: ChangeType, key: AgKey, obj: SimAg, old: SimAg | undefined) => void;
export type InformerLog = (message: string, fields: Record<string, unknown>) => void;

const OBSERVED_LIMIT = 50_000;
const WATCH_RETRY_REAL_MS = 200;

export class AgInformer {
  readonly #cache = new Map<AgKey, SimAg>();
  readonly #observed = new Set<string>();
  readonly #rvWaiters = new Map<string, Array<() => void>>();
  #resourceVersion = '';
  #relistNeeded = false;
  #stopped = false;
  #watch: AbortController | undefined;
  #reconnect: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly api: AgApi,
    private readonly namespace: string | undefined,
    private readonly onChange: OnChange,
    private readonly log: InformerLog,
  ) {}

  /** Keys of every cached AG. */
  keys(): AgKey[] {
    return [...this.#cache.keys()];
  }

  has(key: AgKey): boolean {
    return this.#cache.has(key);
  }

  get size(): number {
    return this.#cache.size;
  }

  /** Initial list (every AG is delivered as ADDED), then open the watch. */
  async start(): Promise<void> {
    await this.#relist();
    await this.#openWatch();
  }

  stop(): void {
    this.#stopped = true;
    this.#watch?.abort();
    this.#watch = undefined;
    if (this.#reconnect !== undefined) clearTimeout(this.#reconnect);
    this.#reconnect = undefined;
  }

  /** Resolves once an event (or list item) with this resourceVersion was delivered. */
  observed(resourceVersion: string, timeoutMs: number): Promise<void> {
    if (typeof resourceVersion !== 'string' || resourceVersion === '') {
      return Promise.reject(
        new TypeError('source-watcher-sim: observed() needs a resourceVersion'),
      );
    }
    if (this.#observed.has(resourceVersion)) return Promise.resolve();
    if (this.#stopped) return Promise.reject(new Error('source-watcher-sim: stopped'));
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const rest = (this.#rvWaiters.get(resourceVersion) ?? []).filter((w) => w !== done);
        if (rest.length > 0) this.#rvWaiters.set(resourceVersion, rest);
        else this.#rvWaiters.delete(resourceVersion);
        reject(
          new Error(
            `source-watcher-sim: resourceVersion ${resourceVersion} not observed in ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      this.#rvWaiters.set(resourceVersion, [...(this.#rvWaiters.get(resourceVersion) ?? []), done]);
    });
  }

  #markObserved(resourceVersion: string | undefined): void {
    if (!resourceVersion) return;
    this.#observed.add(resourceVersion);
    if (this.#observed.size > OBSERVED_LIMIT) {
      const oldest = this.#observed.values().next().value;
      if (oldest !== undefined) this.#observed.delete(oldest);
    }
    const waiting = this.#rvWaiters.get(resourceVersion);
    if (waiting) {
      this.#rvWaiters.delete(resourceVersion);
      for (const done of waiting) done();
    }
  }

  #deliver(type: ChangeType, ag: SimAg): void {
    const key = keyOf(ag.metadata);
    const old = this.#cache.get(key);
    if (type === 'DELETED') this.#cache.delete(key);
    else this.#cache.set(key, ag);
    this.onChange(type, key, ag, old);
    this.#markObserved(ag.metadata.resourceVersion);
  }

  async #relist(): Promise<void> {
    const { items, resourceVersion } = await this.api.list(this.namespace);
    if (this.#stopped) return;
    const seen = new Set<AgKey>();
    for (const ag of items) {
      seen.add(keyOf(ag.metadata));
      this.#deliver(this.#cache.has(keyOf(ag.metadata)) ? 'MODIFIED' : 'ADDED', ag);
    }
    for (const [key, ag] of [...this.#cache]) {
      if (!seen.has(key)) this.#deliver('DELETED', ag);
    }
    this.#resourceVersion = resourceVersion;
  }

  async #openWatch(): Promise<void> {
    if (this.#stopped) return;
    const controller = await this.api.watch(
      this.namespace,
      this.#resourceVersion,
      (type, obj) => this.#onEvent(type, obj),
      (err) => this.#onDone(err),
    );
    if (this.#stopped) {
      controller.abort();
      return;
    }
    // done() may already have run (a failed connect aborts the controller): then a retry is armed.
    if (!controller.signal.aborted) this.#watch = controller;
  }

  #onEvent(type: string, obj: unknown): void {
    if (this.#stopped) return;
    if (type === 'BOOKMARK') {
      const rv = (obj as { metadata?: { resourceVersion?: string } } | null)?.metadata
        ?.resourceVersion;
      if (rv) this.#resourceVersion = rv;
      return;
    }
    if (type === 'ERROR') {
      const code = (obj as { code?: number } | null)?.code;
      if (code === 410) this.#relistNeeded = true;
      this.log('watch error event', { code });
      return;
    }
    if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return;
    const ag = asAg(obj);
    if (!ag) return;
    if (ag.metadata.resourceVersion) this.#resourceVersion = ag.metadata.resourceVersion;
    this.#deliver(type, ag);
  }

  #onDone(err: unknown): void {
    this.#watch = undefined;
    if (this.#stopped || this.#reconnect !== undefined) return;
    if (httpStatusOf(err) === 410) this.#relistNeeded = true;
    if (err) this.log('watch ended', { error: err instanceof Error ? err.message : String(err) });
    // Transport retry in real time (not simulated behaviour); cleared by stop().
    this.#reconnect = setTimeout(
      () => {
        this.#reconnect = undefined;
        void this.#rewatch();
      },
      err ? WATCH_RETRY_REAL_MS : 0,
    );
  }

  async #rewatch(): Promise<void> {
    try {
      if (this.#relistNeeded) {
        this.#relistNeeded = false;
        await this.#relist();
      }
      await this.#openWatch();
    } catch (e) {
      this.#onDone(e ?? new Error('watch failed'));
    }
  }
}
