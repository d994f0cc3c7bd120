// Recovery state kept on the AG as annotations, read defensively.

import type { RecoveryConfig } from '../config/recovery-config.js';
import { ownValue } from '../codecs/plain.js';
import { formatTimeNano, parseTime } from '../codecs/time.js';
import type { ArtifactGenerator } from '../objects/types.js';

export const ANNOTATION_REQUESTED_AT = 'reconcile.fluxcd.io/requestedAt';
export const ANNOTATION_ATTEMPTS = 'cozystack.io/source-watcher-recovery-attempts';
export const ANNOTATION_LAST_RECOVERY_AT = 'cozystack.io/source-watcher-last-recovery-at';
/**
 * When attempt 1 was claimed (docs/adr/0059): kept by later claims, so a stall's length is known
 * at its outcome. Absent on tracking written before it existed: the length is then unknown.
 */
export const ANNOTATION_FIRST_RECOVERY_AT = 'cozystack.io/source-watcher-first-recovery-at';

/** Attempt counts above this are treated as malformed (read as 0). */
export const MAX_TRACKED_ATTEMPTS = 1000;

export interface Tracking {
  /** Forces claimed so far; malformed values read as 0. */
  attempts: number;
  /** When the last force was claimed; null means "long ago" (missing, malformed, or too far ahead). */
  lastRecoveryAt: number | null;
  /**
   * When attempt 1 was claimed; null when missing, malformed, too far ahead or after the last
   * claim (an orphan of an older version's clear, or a hand edit).
   */
  firstRecoveryAt: number | null;
  /** Either tracking annotation (attempts, last-recovery-at) exists, whatever its value. */
  present: boolean;
}

export function readTracking(
  ag: ArtifactGenerator,
  now: number,
  cfg: Pick<RecoveryConfig, 'clockSkewMs'>,
): Tracking {
  const annotations: unknown = ag.metadata?.annotations;
  const rawAttempts = ownValue(annotations, ANNOTATION_ATTEMPTS);
  const rawLast = ownValue(annotations, ANNOTATION_LAST_RECOVERY_AT);
  const present =
    hasOwn(annotations, ANNOTATION_ATTEMPTS) || hasOwn(annotations, ANNOTATION_LAST_RECOVERY_AT);
  const lastRecoveryAt = parseLast(rawLast, now, cfg);
  const first = parseLast(ownValue(annotations, ANNOTATION_FIRST_RECOVERY_AT), now, cfg);
  return {
    attempts: parseAttempts(rawAttempts),
    lastRecoveryAt,
    firstRecoveryAt:
      first !== null && lastRecoveryAt !== null && first <= lastRecoveryAt ? first : null,
    present,
  };
}

/** Plain decimal digits only, 0..MAX_TRACKED_ATTEMPTS; anything else is 0. */
export function parseAttempts(value: unknown): number {
  if (typeof value !== 'string' || !/^[0-9]{1,10}$/.test(value)) return 0;
  const n = Number(value);
  return n <= MAX_TRACKED_ATTEMPTS ? n : 0;
}

function parseLast(
  value: unknown,
  now: number,
  cfg: Pick<RecoveryConfig, 'clockSkewMs'>,
): number | null {
  const t = parseTime(value);
  if (t === null) return null;
  return t - now > cfg.clockSkewMs ? null : t;
}

/** The annotations a force claims: attempt N at `now`; attempt 1 also stamps the first claim. */
export function claimAnnotations(attempt: number, now: number): Record<string, string> {
  const at = formatTimeNano(now);
  return {
    [ANNOTATION_ATTEMPTS]: String(attempt),
    [ANNOTATION_LAST_RECOVERY_AT]: at,
    ...(attempt === 1 ? { [ANNOTATION_FIRST_RECOVERY_AT]: at } : {}),
  };
}

/** A merge patch deleting the tracking annotations; requestedAt is left alone. */
export function clearTrackingPatch(): Record<string, null> {
  return {
    [ANNOTATION_ATTEMPTS]: null,
    [ANNOTATION_LAST_RECOVERY_AT]: null,
    [ANNOTATION_FIRST_RECOVERY_AT]: null,
  };
}

/**
 * Seconds from the first claim to `now` (a stall's length at its outcome), or undefined when the
 * first claim is not known (no claim, or tracking written before the first claim was kept).
 */
export function stallSeconds(tracking: Tracking, now: number): number | undefined {
  const first = tracking.firstRecoveryAt;
  if (tracking.attempts < 1 || first === null || first > now) return undefined;
  return (now - first) / 1000;
}

function hasOwn(container: unknown, key: string): boolean {
  return (
    typeof container === 'object' &&
    container !== null &&
    Object.prototype.hasOwnProperty.call(container, key)
  );
}
