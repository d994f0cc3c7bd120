// The Event step of each recovery action, from the AG the function acted on. Pure.

import type { RecoveryConfig } from '../config/recovery-config.js';
import { readyOf } from '../objects/conditions.js';
import type { GateReason } from '../decision/gate.js';
import type { EventStep, StalledStep } from './vocabulary.js';
import { parseTime } from '../codecs/time.js';
import { readTracking } from '../decision/tracking.js';
import type { ArtifactGenerator, PackageSource } from '../objects/types.js';

/** Force `attempt`, claimed at `claimAt`, opened by `gate`. */
export function forcedStep(
  attempt: number,
  claimAt: number,
  cfg: RecoveryConfig,
  gate?: GateReason,
): EventStep {
  return {
    kind: 'forced',
    attempt,
    maxAttempts: cfg.maxAttempts,
    claimAt,
    ...(gate !== undefined ? { gate } : {}),
  };
}

/** The interrupted force recorded on `ag` was finished. */
export function resumedStep(ag: ArtifactGenerator, now: number, cfg: RecoveryConfig): EventStep {
  const t = readTracking(ag, now, cfg);
  return {
    kind: 'resumed',
    attempt: t.attempts,
    maxAttempts: cfg.maxAttempts,
    claimAt: t.lastRecoveryAt ?? now,
  };
}

/** `ag` (as read before its tracking was cleared) is healthy again. */
export function recoveredStep(ag: ArtifactGenerator, now: number, cfg: RecoveryConfig): EventStep {
  const t = readTracking(ag, now, cfg);
  const ready = readyOf(ag);
  return {
    kind: 'recovered',
    attempts: t.attempts,
    claimAt: t.lastRecoveryAt,
    readyStatus: ready?.status ?? 'Unknown',
    readyReason: ready?.reason ?? 'none',
  };
}

/**
 * The verdict on `ag`; `packageSource` is the owner that now shows it, if any (its uid, as read
 * from the API server, gives the verdict an Event on the PackageSource too).
 */
export function stalledStep(
  ag: ArtifactGenerator,
  packageSource: PackageSource | string | null,
  now: number,
  cfg: RecoveryConfig,
): StalledStep {
  const t = readTracking(ag, now, cfg);
  const step: StalledStep = {
    kind: 'stalled',
    attempts: t.attempts,
    claimAt: t.lastRecoveryAt,
    packageSource: typeof packageSource === 'string' ? packageSource : null,
  };
  if (packageSource !== null && typeof packageSource === 'object') {
    step.packageSource = packageSource.metadata?.name ?? null;
    step.packageSourceUid = packageSource.metadata?.uid ?? null;
  }
  return step;
}

/**
 * Observe mode would force `attempt`. Its stamp is the stall: Ready's lastTransitionTime (or the
 * creation time without Ready), which stays put while nothing is written, so repeats aggregate.
 */
export function wouldForceStep(
  ag: ArtifactGenerator,
  attempt: number,
  cfg: RecoveryConfig,
): EventStep {
  const ready = readyOf(ag);
  const stallAt =
    parseTime(ready?.lastTransitionTime) ?? parseTime(ag.metadata?.creationTimestamp) ?? null;
  return { kind: 'would-force', attempt, maxAttempts: cfg.maxAttempts, stallAt };
}
