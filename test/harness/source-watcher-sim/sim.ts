// The simulator: a watch on ArtifactGenerators feeding a deduplicated work queue, a bounded pool
// of workers running the reconcile, controller-runtime's requeue rules, and the fault knobs.
// Every simulated delay (requeues, retries, build time) is a timer on the VirtualClock.

import type { VirtualClock, TimerId } from '../virtual-clock.js';
import { AgApi } from './ag-api.js';
import { EaApi } from './ea-api.js';
import { AgInformer, type ChangeType } from './ag-informer.js';
import { DEFAULT_CONCURRENCY } from './constants.js';
import { DRIFT_REASONS } from './drift.js';
import { Knobs, type LossRule, type LossScope } from './knobs.js';
import { shouldEnqueueUpdate } from './predicates.js';
import {
  reconcile,
  type ReconcileOutcome,
  type ReconcileResult,
  type ReconcilerDeps,
} from './reconciler.js';
import type {
  ReconcileRecord,
  SimLog,
  SimStats,
  SourceWatcherSim,
  SourceWatcherSimOptions,
} from './sim-types.js';
import { StoppedError } from './stopped.js';
import { toKey, type AgKey, type AgName, type SimAg } from './types.js';
import { RateLimiter, WorkQueue } from './work-queue.js';

export type {
  ReconcileRecord,
  SimLog,
  SimRequest,
  SimStats,
  SourceWatcherSim,
  SourceWatcherSimOptions,
} from './sim-types.js';

const HISTORY_LIMIT = 100_000;
const DEFAULT_OBSERVED_TIMEOUT_REAL_MS = 10_000;

function zeroCounts<K extends string>(keys: readonly K[]): Record<K, number> {
  return Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
}

const OUTCOMES: readonly ReconcileOutcome[] = [
  'NotFound',
  'Finalized',
  'FinalizerAdded',
  'Disabled',
  'SourceFetchFailed',
  'NoDrift',
  'InProgressPatchFailed',
  'Built',
  'BuildFailed',
  'ReconciliationFailed',
];

interface Waiter {
  ready: () => boolean;
  resolve: () => void;
}

class Simulator implements SourceWatcherSim {
  readonly #clock: VirtualClock;
  readonly #namespace: string | undefined;
  readonly #informer: AgInformer;
  readonly #concurrency: number;
  readonly #log: SimLog;
  readonly #api: AgApi;
  readonly #eas: EaApi | undefined;
  readonly #knobs: Knobs;
  readonly #queue = new WorkQueue();
  readonly #limiter = new RateLimiter();
  readonly #delayed = new Map<AgKey, { id: TimerId; at: number }>();
  readonly #sleepers = new Map<TimerId, () => void>();
  readonly #workers = new Set<Promise<void>>();
  readonly #waiters: Waiter[] = [];
  readonly #history: ReconcileRecord[] = [];
  readonly #stats: SimStats = {
    reconciles: 0,
    outcomes: zeroCounts(OUTCOMES),
    driftReasons: zeroCounts(DRIFT_REASONS),
    lostWrites: 0,
    errors: 0,
  };

  #started = false;
  #stopped = false;
  #stopping: Promise<void> | undefined;
  /** Bumped on death and stop: reconciles started in an older epoch abort at their next step. */
  #epoch = 0;
  /** Workers holding a key. */
  #running = 0;
  /** Workers not waiting on the virtual clock. */
  #active = 0;

  constructor(options: SourceWatcherSimOptions) {
    const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new RangeError(
        `source-watcher-sim: concurrency must be a positive integer, got ${concurrency}`,
      );
    }
    if (options.namespace !== undefined && options.namespace === '') {
      throw new TypeError('source-watcher-sim: namespace must not be empty');
    }
    this.#knobs = new Knobs(options.seed ?? 1, options.buildTimeMs);
    this.#clock = options.clock;
    this.#namespace = options.namespace;
    this.#concurrency = concurrency;
    this.#log = options.log ?? (() => undefined);
    const onRequest = options.onRequest;
    this.#api = new AgApi(
      options.kubeConfig,
      onRequest &&
        (({ namespace, name, body, ...rest }) => {
          onRequest({
            ...rest,
            at: this.#clock.now(),
            key: `${namespace}/${name}`,
            ...(body ? { body: structuredClone(body) } : {}),
          });
        }),
    );
    this.#eas = options.externalArtifacts
      ? new EaApi(options.kubeConfig, options.onExternalArtifactWrite)
      : undefined;
    this.#informer = new AgInformer(
      this.#api,
      this.#namespace,
      (type, key, obj, old) => this.#onChange(type, key, obj, old),
      this.#log,
    );
  }

  // ---- lifecycle ----

  async start(): Promise<void> {
    if (this.#started) throw new Error('source-watcher-sim: already started');
    this.#started = true;
    await this.#informer.start();
    this.#log('source-watcher-sim started', {
      namespace: this.#namespace ?? '*',
      agents: this.#informer.size,
    });
  }

  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    this.#stopped = true;
    this.#epoch++;
    this.#informer.stop();
    this.#dropTimersAndQueue();
    await Promise.allSettled([...this.#workers]);
    this.#notify();
    this.#log('source-watcher-sim stopped', { reconciles: this.#stats.reconciles });
  }

  #dropTimersAndQueue(): void {
    for (const { id } of this.#delayed.values()) this.#clock.cancel(id);
    this.#delayed.clear();
    for (const [id, abort] of [...this.#sleepers]) {
      this.#clock.cancel(id);
      this.#sleepers.delete(id);
      abort();
    }
    this.#queue.clear();
  }

  // ---- waiting ----

  idle(): Promise<void> {
    return this.#waitFor(() => this.#stopped || (this.#running === 0 && this.#queue.length === 0));
  }

  settled(): Promise<void> {
    return this.#waitFor(() => this.#stopped || this.#active === 0);
  }

  observed(resourceVersion: string, timeoutMs = DEFAULT_OBSERVED_TIMEOUT_REAL_MS): Promise<void> {
    return this.#informer.observed(resourceVersion, timeoutMs);
  }

  #waitFor(ready: () => boolean): Promise<void> {
    if (ready()) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ ready, resolve }));
  }

  #notify(): void {
    for (let i = this.#waiters.length - 1; i >= 0; i--) {
      const w = this.#waiters[i];
      if (w && w.ready()) {
        this.#waiters.splice(i, 1);
        w.resolve();
      }
    }
  }

  // ---- stats ----

  get stats(): SimStats {
    return structuredClone(this.#stats);
  }

  reconcilesOf(ref: AgKey | AgName): ReconcileRecord[] {
    const key = toKey(ref);
    return this.#history.filter((r) => r.key === key);
  }

  // ---- knobs ----

  loseConditionsWrite(ref: AgKey | AgName, rule: LossRule = {}): void {
    this.#knobs.setLoss(toKey(ref), rule);
  }

  keepConditionsWrite(ref: AgKey | AgName): void {
    this.#knobs.clearLoss(toKey(ref));
  }

  setConditionsLossProbability(p: number, scope: LossScope = 'verdict'): void {
    this.#knobs.setLossProbability(p, scope);
  }

  setDead(dead: boolean): void {
    if (typeof dead !== 'boolean')
      throw new TypeError('source-watcher-sim: setDead needs a boolean');
    if (dead === this.#knobs.dead) return;
    this.#knobs.dead = dead;
    if (dead) {
      this.#epoch++;
      this.#dropTimersAndQueue();
      this.#log('source-watcher-sim died', {});
    } else {
      // A restarted controller lists everything and reconciles it.
      this.#limiter.reset();
      for (const key of this.#informer.keys()) this.#enqueue(key);
      this.#log('source-watcher-sim restarted', { agents: this.#informer.size });
    }
    this.#notify();
  }

  setBuildTime(ms: number): void {
    this.#knobs.buildTimeMs = ms;
  }

  setBuildTimeOf(ref: AgKey | AgName, ms: number | undefined): void {
    this.#knobs.setBuildTimeOf(toKey(ref), ms);
  }

  buildTimeOf(ref: AgKey | AgName): number {
    return this.#knobs.buildTimeOf(toKey(ref));
  }

  setBuildFailure(ref: AgKey | AgName, failing: boolean): void {
    const key = toKey(ref);
    if (failing) this.#knobs.buildFailure.add(key);
    else this.#knobs.buildFailure.delete(key);
  }

  failBuildHonestly(ref: AgKey | AgName, request: number): void {
    this.#knobs.failBuildHonestly(toKey(ref), request);
  }

  setSourceMissing(ref: AgKey | AgName, missing: boolean): void {
    const key = toKey(ref);
    const changed = missing !== this.#knobs.sourceMissing.has(key);
    if (missing) this.#knobs.sourceMissing.add(key);
    else this.#knobs.sourceMissing.delete(key);
    if (changed) this.#enqueueReferencing(key);
  }

  setSourceRevision(ref: AgKey | AgName, revision: string): void {
    const key = toKey(ref);
    if (typeof revision !== 'string')
      throw new TypeError('source-watcher-sim: revision must be a string');
    const changed = revision !== this.#knobs.revisionOf(key);
    this.#knobs.sourceRevision.set(key, revision);
    if (changed) this.#enqueueReferencing(key);
  }

  markArtifactMissing(ref: AgKey | AgName): void {
    this.#knobs.artifactMissing.add(toKey(ref));
  }

  // ---- queue and workers ----

  #enqueue(key: AgKey): void {
    if (this.#stopped || this.#knobs.dead || !this.#started) return;
    this.#queue.add(key);
    this.#dispatch();
  }

  /** What source-watcher's watch on source objects does: enqueue the AGs that exist and use them. */
  #enqueueReferencing(key: AgKey): void {
    if (this.#informer.has(key)) this.#enqueue(key);
  }

  #enqueueAfter(key: AgKey, ms: number): void {
    if (ms <= 0) {
      this.#enqueue(key);
      return;
    }
    const at = this.#clock.now() + ms;
    const existing = this.#delayed.get(key);
    // Like client-go's delaying queue: keep the earliest pending time for a key.
    if (existing && existing.at <= at) return;
    if (existing) this.#clock.cancel(existing.id);
    const id = this.#clock.setTimer(at, () => {
      if (this.#delayed.get(key)?.id === id) this.#delayed.delete(key);
      this.#enqueue(key);
    });
    this.#delayed.set(key, { id, at });
  }

  #dispatch(): void {
    while (!this.#stopped && !this.#knobs.dead && this.#running < this.#concurrency) {
      const key = this.#queue.get();
      if (key === undefined) break;
      this.#running++;
      this.#active++;
      const worker = this.#work(key, this.#epoch);
      this.#workers.add(worker);
      void worker.finally(() => this.#workers.delete(worker));
    }
    this.#notify();
  }

  async #work(key: AgKey, epoch: number): Promise<void> {
    const startedAt = this.#clock.now();
    let result: ReconcileResult | undefined;
    let failure: Error | undefined;
    let aborted = false;
    try {
      result = await reconcile(this.#deps(epoch), key);
    } catch (e) {
      if (e instanceof StoppedError) aborted = true;
      else failure = e instanceof Error ? e : new Error(String(e));
    } finally {
      this.#queue.done(key);
      this.#running--;
      this.#active--;
    }
    if (!aborted && epoch === this.#epoch) {
      this.#record(key, startedAt, result, failure);
      this.#requeue(key, result, failure);
    }
    this.#dispatch();
  }

  #deps(epoch: number): ReconcilerDeps {
    const guard = (): void => {
      if (this.#stopped || epoch !== this.#epoch) throw new StoppedError();
    };
    return {
      api: this.#api,
      ...(this.#eas ? { eas: this.#eas } : {}),
      knobs: this.#knobs,
      loseConditions: (key, setsVerdict) => {
        const lost = this.#knobs.takeConditionsLoss(key, setsVerdict);
        if (lost) {
          this.#stats.lostWrites++;
          this.#log('conditions write lost', { key, setsVerdict });
        }
        return lost;
      },
      verdictFailed: (key) => {
        this.#log('conditions write lost', { key, setsVerdict: true, cause: 'api-error' });
      },
      now: () => this.#clock.now(),
      sleep: (ms) => this.#sleep(ms, guard),
      guard,
    };
  }

  /** A virtual-time sleep; while it waits, the worker does not count as active. */
  #sleep(ms: number, guard: () => void): Promise<void> {
    guard();
    if (ms <= 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const id = this.#clock.setTimer(this.#clock.now() + ms, () => {
        this.#sleepers.delete(id);
        this.#active++;
        resolve();
      });
      this.#sleepers.set(id, () => {
        this.#active++;
        reject(new StoppedError());
      });
      this.#active--;
      this.#notify();
    });
  }

  #record(
    key: AgKey,
    at: number,
    result: ReconcileResult | undefined,
    failure: Error | undefined,
  ): void {
    const error = failure ?? result?.error;
    const record: ReconcileRecord = {
      at,
      key,
      outcome: result?.outcome ?? 'Error',
      lostConditions: result?.lostConditions ?? false,
      ...(result?.drift ? { drift: result.drift } : {}),
      ...(error ? { error: error.message } : {}),
    };
    this.#stats.reconciles++;
    if (result) this.#stats.outcomes[result.outcome]++;
    if (result?.drift) this.#stats.driftReasons[result.drift]++;
    if (error) this.#stats.errors++;
    this.#history.push(record);
    if (this.#history.length > HISTORY_LIMIT) this.#history.shift();
    this.#log('reconcile finished', {
      key,
      outcome: record.outcome,
      drift: record.drift,
      error: record.error,
      virtualTime: new Date(at).toISOString(),
    });
  }

  /** controller-runtime: error -> rate-limited; RequeueAfter -> forget + delay; else forget. */
  #requeue(key: AgKey, result: ReconcileResult | undefined, failure: Error | undefined): void {
    if (this.#stopped || this.#knobs.dead) return;
    if (failure || !result || result.error) {
      this.#enqueueAfter(key, this.#limiter.when(key));
    } else if (result.requeueAfterMs !== undefined) {
      this.#limiter.forget(key);
      this.#enqueueAfter(key, result.requeueAfterMs);
    } else {
      this.#limiter.forget(key);
    }
  }

  // ---- watch events ----

  /** source-watcher's predicates: add and delete always; updates per shouldEnqueueUpdate. */
  #onChange(type: ChangeType, key: AgKey, obj: SimAg, old: SimAg | undefined): void {
    if (type === 'DELETED') {
      this.#enqueue(key);
      return;
    }
    const isNew = !old || old.metadata.uid !== obj.metadata.uid;
    if (isNew || shouldEnqueueUpdate(old, obj)) this.#enqueue(key);
  }
}

export function createSourceWatcherSim(options: SourceWatcherSimOptions): SourceWatcherSim {
  return new Simulator(options);
}
