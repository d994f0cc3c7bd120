import type { Clock } from '../../shared/runtime/clock.js';
import type { Metrics } from '../../shared/runtime/metrics.js';
import type { FunctionConfig } from '../../shared/runtime/env.js';
import type { Logger } from '../../shared/runtime/logger.js';
import type { KubePort } from '../../shared/kube/port.js';
import type { SyncTurns } from './sync-turns.js';
import type { OwedEvents } from '../../shared/recovery/owed-kube-events.js';

export interface SurfaceStalledDeps {
  readonly kube: KubePort;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly config: FunctionConfig;
  /** Metrics (docs/adr/0059); absent: none recorded. */
  readonly metrics?: Metrics;
  /** One sync per AG at a time in this replica (ADR 50). */
  readonly turns: SyncTurns;
  /** The verdict Events this process could not write yet (docs/adr/0061). Kept by the process. */
  readonly owedEvents: OwedEvents;
}

/** The deps the process keeps for its life: createApp makes them when the caller does not. */
export type SurfaceStalledKept = 'owedEvents';
