import type { Clock } from '../../shared/runtime/clock.js';
import type { Metrics } from '../../shared/runtime/metrics.js';
import type { Emitter } from '../../shared/runtime/broker-emitter.js';
import type { FunctionConfig } from '../../shared/runtime/env.js';
import type { Logger } from '../../shared/runtime/logger.js';
import type { KubePort } from '../../shared/kube/port.js';
import type { HistoryNotices } from '../../shared/recovery/history-notices.js';
import type { PreviousVersions } from '../../shared/recovery/previous-versions.js';
import type { RecentActions } from './recent-actions.js';
import type { SweepResumes } from './sweep-resume.js';

/** Exact follow-ups without timers: detect programs a PingSource to fire when an AG is due. */
export interface FollowUps {
  /** Make sure a follow-up fires no later than `dueMs`. Writes nothing when one already does. */
  ensureBy(dueMs: number, log: Logger): Promise<void>;
  /** After a full sweep: program exactly the earliest due time, or remove the alarm when none. */
  settle(earliestDueMs: number | null, log: Logger): Promise<void>;
}

export interface DetectDeps {
  readonly kube: KubePort;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly config: FunctionConfig;
  /** Metrics (docs/adr/0059); absent: none recorded. */
  readonly metrics?: Metrics;
  readonly emitter: Emitter;
  readonly followUps: FollowUps;
  // Kept by the process for its life (DetectKept: createApp makes them when not given).
  readonly notices: HistoryNotices;
  /** The AG versions before a revision, kept by the process (docs/adr/0045). */
  readonly previousVersions: PreviousVersions;
  /** The actions emitted moments ago, not repeated (docs/adr/0047). */
  readonly recentActions: RecentActions;
  /** Where incomplete sweeps stopped, for their redeliveries (docs/adr/0057). */
  readonly sweepResumes: SweepResumes;
}

/** The deps the process keeps for its life: createApp makes them when the caller does not. */
export type DetectKept = 'notices' | 'previousVersions' | 'recentActions' | 'sweepResumes';
