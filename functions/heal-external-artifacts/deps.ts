import type { Clock } from '../../shared/runtime/clock.js';
import type { Metrics } from '../../shared/runtime/metrics.js';
import type { FunctionConfig } from '../../shared/runtime/env.js';
import type { Logger } from '../../shared/runtime/logger.js';
import type { ExternalArtifactPort } from '../../shared/kube/external-artifact-port.js';
import type { KubePort } from '../../shared/kube/port.js';

export interface HealDeps {
  /** The AG (get, annotation patch) and the Events. */
  readonly kube: KubePort;
  readonly externalArtifacts: ExternalArtifactPort;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly config: FunctionConfig;
  /** Metrics (docs/adr/0059); absent: none recorded. */
  readonly metrics?: Metrics;
}
