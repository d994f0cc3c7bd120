// The simulator's public interface: options, counters, the reconcile record, and the handle.

import type { KubeConfig } from '@kubernetes/client-node';
import type { VirtualClock } from '../virtual-clock.js';
import type { DriftReason } from './drift.js';
import type { LossRule, LossScope } from './knobs.js';
import type { ReconcileOutcome } from './reconciler.js';
import type { AgKey, AgName } from './types.js';
import type { EaWrite } from './ea-api.js';

export type SimLog = (message: string, fields: Record<string, unknown>) => void;

/** One request of the simulator to one ArtifactGenerator (see SourceWatcherSimOptions.onRequest). */
export interface SimRequest {
  /** Virtual epoch ms when it was sent. */
  at: number;
  key: AgKey;
  /** 'get' are the simulator's reads (source-watcher reads its informer cache instead). */
  verb: 'get' | 'patch';
  /** 'status' for the status subresource, '' for the main resource. */
  subresource: '' | 'status';
  /** The merge-patch body as sent (patches only; a copy). */
  body?: object;
  /** 200 on success, the HTTP status of an error, 500 for a lost write; undefined: no HTTP answer. */
  code: number | undefined;
  /** A conditions request dropped by fault injection: never sent to the API server. */
  lost: boolean;
}

export interface SourceWatcherSimOptions {
  kubeConfig: KubeConfig;
  clock: VirtualClock;
  /** Watch one namespace; all namespaces when absent. */
  namespace?: string;
  /** Virtual time one build takes (default 1000 ms). */
  buildTimeMs?: number;
  /** Seed of the RNG behind setConditionsLossProbability (default 1). */
  seed?: number;
  /** Concurrent reconciles across different AGs (default 4); one AG is never reconciled twice at once. */
  concurrency?: number;
  /** Structured log sink: a constant message plus fields. Default: silent. */
  log?: SimLog;
  /**
   * Called once per request to a single AG, in the order they are answered: every GET and PATCH
   * the simulator sends, and every conditions PATCH that fault injection drops (code 500,
   * lost: true). Not called for the LIST and WATCH of the informer. Default: none.
   */
  onRequest?: (request: SimRequest) => void;
  /**
   * Generate and own ExternalArtifacts as source-watcher does (docs/adr/0039): server-side apply
   * of each inventory entry's object and status after the build, before the verdict and the
   * inventory are written; garbage collection of entries that left the inventory; the drift check
   * against the labelled objects. Default off.
   */
  externalArtifacts?: boolean;
  /** Called for each ExternalArtifact write (apply, apply-status, delete), once answered. */
  onExternalArtifactWrite?: (write: EaWrite) => void;
}

export interface SimStats {
  /** Reconciles that ran to the end (including NotFound). */
  reconciles: number;
  outcomes: Record<ReconcileOutcome, number>;
  /** Drift detected, by reason (every rebuild has one). */
  driftReasons: Record<DriftReason, number>;
  /** Conditions requests dropped by fault injection. */
  lostWrites: number;
  /** Reconciles that ended with an error (requeued through the rate limiter). */
  errors: number;
}

export interface ReconcileRecord {
  /** Virtual epoch ms when the reconcile started. */
  at: number;
  key: AgKey;
  outcome: ReconcileOutcome | 'Error';
  drift?: DriftReason;
  error?: string;
  lostConditions: boolean;
}

export interface SourceWatcherSim {
  /** List, enqueue every AG (like a controller starting), and open the watch. */
  start(): Promise<void>;
  /** Stop: closes the watch, cancels every virtual timer, waits for in-flight reconciles to end. */
  stop(): Promise<void>;
  /** Resolves when no reconcile is in flight and no key waits in the queue (delayed requeues aside). */
  idle(): Promise<void>;
  /** Resolves when every in-flight reconcile is waiting on the virtual clock (or done): a settle hook. */
  settled(): Promise<void>;
  /** Resolves once the watch delivered the event with this resourceVersion (rejects after timeoutMs real ms). */
  observed(resourceVersion: string, timeoutMs?: number): Promise<void>;
  /** A snapshot of the counters. */
  readonly stats: SimStats;
  reconcilesOf(ref: AgKey | AgName): ReconcileRecord[];

  /** Lose in-scope conditions requests of this AG (default: every 'verdict' write until cleared). */
  loseConditionsWrite(ref: AgKey | AgName, rule?: LossRule): void;
  /** Stop losing conditions requests of this AG. */
  keepConditionsWrite(ref: AgKey | AgName): void;
  /** Lose each in-scope conditions request of any AG with probability p (seeded RNG). */
  setConditionsLossProbability(p: number, scope?: LossScope): void;
  /** Dead: nothing is reconciled, events are ignored. Reviving acts like a restart (every AG enqueued). */
  setDead(dead: boolean): void;
  /** Virtual time every build takes, for AGs without their own build time. */
  setBuildTime(ms: number): void;
  /**
   * This AG's own build time in virtual ms (any finite value >= 0, e.g. 200 ms to 110 s; a slow
   * artifact download), used from its next build on; undefined goes back to the global build
   * time. Works for AGs not created yet. Does not enqueue.
   */
  setBuildTimeOf(ref: AgKey | AgName, ms: number | undefined): void;
  /** The build time that applies to this AG now (its own, else the global one). */
  buildTimeOf(ref: AgKey | AgName): number;
  setBuildFailure(ref: AgKey | AgName, failing: boolean): void;
  /**
   * The first build of this AG for its n-th distinct requestedAt (the rebuild after the n-th
   * force) fails honestly: Ready=False/ReconciliationFailed "etcdserver: request timed out",
   * written even under a loss rule (the storm's errors failing a rebuild, issue 19 defect 4).
   * Works for AGs not created yet.
   */
  failBuildHonestly(ref: AgKey | AgName, request: number): void;
  /** A missing source: Ready=False SourceFetchFailed, retried every 5 s. Enqueues the AG if it exists (source watch). */
  setSourceMissing(ref: AgKey | AgName, missing: boolean): void;
  /** A new revision of the AG's sources: its digest changes. Enqueues the AG if it exists (source watch). */
  setSourceRevision(ref: AgKey | AgName, revision: string): void;
  /** A stored artifact goes missing until the next successful build. Does not enqueue. */
  markArtifactMissing(ref: AgKey | AgName): void;
}
