// Whether the recovery state machine runs for an AG at all.

import type { RecoveryConfig } from '../config/recovery-config.js';
import { readyOf, REASON_FORCED } from '../objects/conditions.js';
import { lostWriteCandidate, NO_SIGNALS, type Signals } from './lost-write.js';
import { isFiniteNumber } from '../codecs/plain.js';
import { isStuck } from './stuck.js';
import { readTracking } from './tracking.js';
import type { ArtifactGenerator } from '../objects/types.js';

/**
 * own-marker: our forced Ready reflected back; rebuilding: Unknown after a force; stuck: §3, the
 * time rule (the fallback for stalls that leave no signal); lost-write: the outputs moved while
 * Ready stayed Unknown (signal B, seen in the AG's history, docs/adr/0014-early-detection.md).
 */
export type GateReason = 'own-marker' | 'rebuilding' | 'stuck' | 'lost-write';

export function gateReason(
  ag: ArtifactGenerator,
  now: number,
  cfg: RecoveryConfig,
  signals: Signals = NO_SIGNALS,
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
  if (isStuck(ag, now, cfg)) return 'stuck';
  // The signal was computed against this very object; it counts only while early detection is on
  // and the object still has the stall's shape.
  if (signals.lostWrite && cfg.earlyDetection && lostWriteCandidate(ag)) return 'lost-write';
  return null;
}
