// The fluxcd/pkg#934 signature: outputs saved, Ready verdict lost.

import type { RecoveryConfig } from '../config/recovery-config.js';
import { readyOf } from '../objects/conditions.js';
import { isFiniteNumber, isNonEmptyString } from '../codecs/plain.js';
import { parseTime } from '../codecs/time.js';
import type { ArtifactGenerator } from '../objects/types.js';

/** Inventory is a non-empty array and observedSourcesDigest a non-empty string. */
export function hasOutputs(ag: ArtifactGenerator): boolean {
  const inventory: unknown = ag.status?.inventory;
  return (
    Array.isArray(inventory) &&
    inventory.length > 0 &&
    isNonEmptyString(ag.status?.observedSourcesDigest)
  );
}

/**
 * When the AG's "waiting for a verdict" clock started, if it is waiting: Ready Unknown on the
 * current generation (its lastTransitionTime), or Ready missing (creationTimestamp).
 * undefined when Ready is something else; null when the relevant time is unparseable.
 */
export function pendingSince(ag: ArtifactGenerator): number | null | undefined {
  const ready = readyOf(ag);
  if (ready === undefined) return parseTime(ag.metadata?.creationTimestamp);
  const generation = ag.metadata?.generation;
  if (
    ready.status !== 'Unknown' ||
    !isFiniteNumber(generation) ||
    ready.observedGeneration !== generation
  ) {
    return undefined;
  }
  return parseTime(ready.lastTransitionTime);
}

/** docs/design.md §3, the time rule ("stuck"). The grace period must have passed strictly before `now`. */
export function isStuck(
  ag: ArtifactGenerator,
  now: number,
  cfg: Pick<RecoveryConfig, 'gracePeriodMs'>,
): boolean {
  if (!hasOutputs(ag)) return false;
  const since = pendingSince(ag);
  return typeof since === 'number' && since + cfg.gracePeriodMs < now;
}
