// Whether the recovery state machine runs for an AG at all.

import type { RecoveryConfig } from './config.js';
import { readyOf, REASON_FORCED } from './conditions.js';
import { isFiniteNumber } from './plain.js';
import { isStuck } from './stuck.js';
import { readTracking } from './tracking.js';
import type { ArtifactGenerator } from './types.js';

/** own-marker: our forced Ready reflected back; rebuilding: Unknown after a force; stuck: §3. */
export type GateReason = 'own-marker' | 'rebuilding' | 'stuck';

export function gateReason(
  ag: ArtifactGenerator,
  now: number,
  cfg: RecoveryConfig,
): GateReason | null {
  const ready = readyOf(ag);
  if (ready?.reason === REASON_FORCED) return 'own-marker';
  const generation = ag.metadata?.generation;
  if (
    ready?.status === 'Unknown' &&
    isFiniteNumber(generation) &&
    ready.observedGeneration === generation &&
    readTracking(ag, now, cfg).attempts > 0
  ) {
    return 'rebuilding';
  }
  return isStuck(ag, now, cfg) ? 'stuck' : null;
}
