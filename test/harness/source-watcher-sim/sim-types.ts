// The simulator's public interface: options, counters, the reconcile record, and the handle.

import type { KubeConfig } from '@kubernetes/client-node';
import type { VirtualClock } from '../virtual-clock.js';
import type { DriftReason } from './drift.js';
import type { LossRule, LossScope } from './knobs.js';
import type { ReconcileOutcome } from './reconciler.js';
import type { AgKey, AgName } from './types.js';

export type SimLog = (message: string, fields: Record<string, unknown>) => void;

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
  /** Every finished reconcile, oldest first. */
  readonly history: readonly ReconcileRecord[];
  reconcilesOf(ref: AgKey | AgName): ReconcileRecord[];

  /** Lose in-scope conditions requests of this AG (default: every 'verdict' write until cleared). */
  loseConditionsWrite(ref: AgKey | AgName, rule?: LossRule): void;
  /** Stop losing conditions requests of this AG. */
  keepConditionsWrite(ref: AgKey | AgName): void;
  /** Lose each in-scope conditions request of any AG with probability p (seeded RNG). */
  setConditionsLossProbability(p: number, scope?: LossScope): void;
  /** Dead: nothing is reconciled, events are ignored. Reviving acts like a restart (every AG enqueued). */
  setDead(dead: boolean): void;
  readonly dead: boolean;
  /** Extra virtual latency at the start of every reconcile. */
  setSlow(ms: number): void;
  setBuildTime(ms: number): void;
  /** One AG's build time (virtual ms); null returns it to the shared build time. */
  setBuildTimeOf(ref: AgKey | AgName, ms: number | null): void;
  setBuildFailure(ref: AgKey | AgName, failing: boolean): void;
  /** A missing source: Ready=False SourceFetchFailed, retried every 5 s. Enqueues the AG if it exists (source watch). */
  setSourceMissing(ref: AgKey | AgName, missing: boolean): void;
  /** A new revision of the AG's sources: its digest changes. Enqueues the AG if it exists (source watch). */
  setSourceRevision(ref: AgKey | AgName, revision: string): void;
  /** A stored artifact goes missing until the next successful build. Does not enqueue. */
  markArtifactMissing(ref: AgKey | AgName): void;
  /** The ExternalArtifacts differ until the next successful build. Does not enqueue. */
  markExternalArtifactsDiffer(ref: AgKey | AgName): void;
}
