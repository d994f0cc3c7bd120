import type { Clock } from '../../shared/runtime/clock.js';
import type { Metrics } from '../../shared/runtime/metrics.js';
import type { FunctionConfig } from '../../shared/runtime/env.js';
import type { Logger } from '../../shared/runtime/logger.js';
import type { KubePort } from '../../shared/kube/port.js';
import type { HistoryNotices } from '../../shared/recovery/history-notices.js';
import type { PreviousVersions } from '../../shared/recovery/previous-versions.js';
import type { WarnOnce } from '../../shared/runtime/warn-once.js';
import type { OwedEvents } from '../../shared/recovery/owed-kube-events.js';

export interface ForceDriftDeps {
  readonly kube: KubePort;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly config: FunctionConfig;
  /** Metrics (docs/adr/0059); absent: none recorded. */
  readonly metrics?: Metrics;
  // Kept by the process for its life (ForceDriftKept: createApp makes them when not given).
  readonly notices: HistoryNotices;
  /** The AG versions before a revision, kept by the process (docs/adr/0045). */
  readonly previousVersions: PreviousVersions;
  /** Trouble that repeats under a storm: warn once per process and cause, debug after. */
  readonly warnOnce: WarnOnce;
  /** The Events of steps this process could not write yet (docs/adr/0061). */
  readonly owedEvents: OwedEvents;
}

/** The deps the process keeps for its life: createApp makes them when the caller does not. */
export type ForceDriftKept = 'notices' | 'previousVersions' | 'warnOnce' | 'owedEvents';
