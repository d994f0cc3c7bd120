// The decision: what to do about one AG at one moment. A pure function of (AG, now, config).

import { backoffFor } from './backoff.js';
import type { RecoveryConfig } from '../config/recovery-config.js';
import { gateReason, type GateReason } from './gate.js';
import { cycleEnded } from './cycle.js';
import { historyCouldHelp, NO_SIGNALS, type Signals } from './lost-write.js';
import { isNonEmptyString, ownValue } from '../codecs/plain.js';
import { parseTime } from '../codecs/time.js';
import { ANNOTATION_REQUESTED_AT, readTracking } from './tracking.js';
import type { ArtifactGenerator } from '../objects/types.js';

export type RecoveryStep =
  | { kind: 'force'; attempt: number }
  | { kind: 'wait'; until: number; remainingMs: number }
  | { kind: 'give-up' };

/**
 * docs/design.md §3, the attempt table. elapsed = now - lastRecoveryAt clamped at >= 0; null means long ago.
 *   0 attempts                                  -> force attempt 1
 *   1..max-1, elapsed >= backoffFor(attempts)   -> force attempts+1, else wait the remainder
 *   >= max,   elapsed <  backoffFor(attempts)   -> wait the remainder (final window), else give up
 */
export function decideRecovery(
  attempts: number,
  lastRecoveryAt: number | null,
  now: number,
  cfg: RecoveryConfig,
): RecoveryStep {
  if (!(attempts > 0)) return { kind: 'force', attempt: 1 };
  const elapsed = lastRecoveryAt === null ? Infinity : Math.max(0, now - lastRecoveryAt);
  const backoff = backoffFor(attempts, cfg);
  if (elapsed < backoff) {
    const remainingMs = backoff - elapsed;
    return { kind: 'wait', until: now + remainingMs, remainingMs };
  }
  return attempts < cfg.maxAttempts
    ? { kind: 'force', attempt: attempts + 1 }
    : { kind: 'give-up' };
}

/** A claimed force whose requestedAt write is missing is finished only after this settle time. */
export const RESUME_SETTLE_MS = 10_000;

export type Decision =
  | { kind: 'ignore'; why: 'deleting' | 'invalid' }
  /**
   * `needsHistory`: decided without the AG's history (no `signals` given), and its previous
   * version could turn this into a force (early detection: the lost-write signal). The caller
   * reads the history and decides again with the signals it found.
   */
  | { kind: 'healthy'; clearTracking: boolean; needsHistory: boolean }
  | { kind: 'force'; attempt: number; gate: GateReason }
  | { kind: 'resume'; attempt: number; gate: GateReason }
  | { kind: 'wait'; attempts: number; until: number; gate: GateReason }
  | { kind: 'give-up'; attempts: number; gate: GateReason };

export function isDeleting(ag: ArtifactGenerator): boolean {
  const ts: unknown = ag.metadata?.deletionTimestamp;
  return ts !== undefined && ts !== null && ts !== '';
}

/**
 * `signals`: what the caller learned beyond the AG itself (the lost-write signal from the AG's
 * previous version). Without them the decision is the reference's, with the time rule alone, and
 * a healthy answer says whether reading the history could change it (`needsHistory`).
 */
export function decide(
  ag: ArtifactGenerator,
  now: number,
  cfg: RecoveryConfig,
  signals?: Signals,
): Decision {
  if (isDeleting(ag)) return { kind: 'ignore', why: 'deleting' };
  if (!isNonEmptyString(ag.metadata?.name) || !isNonEmptyString(ag.metadata?.namespace)) {
    return { kind: 'ignore', why: 'invalid' };
  }
  if (cfg.mode === 'off') return { kind: 'healthy', clearTracking: false, needsHistory: false };

  const tracking = readTracking(ag, now, cfg);
  const gate = gateReason(ag, now, cfg, signals ?? NO_SIGNALS);
  if (gate === null) {
    // Only an honest condition ends the cycle; a young honest failure keeps the count
    // (docs/adr/0042-recovery-cycle-end.md).
    return {
      kind: 'healthy',
      clearTracking: tracking.present && cycleEnded(ag, now, cfg),
      needsHistory: signals === undefined && historyCouldHelp(ag, cfg),
    };
  }

  const { attempts, lastRecoveryAt } = tracking;
  const step = decideRecovery(attempts, lastRecoveryAt, now, cfg);
  switch (step.kind) {
    case 'force':
      return { kind: 'force', attempt: step.attempt, gate };
    case 'give-up':
      return { kind: 'give-up', attempts, gate };
    case 'wait':
      if (resumeDue(ag, attempts, lastRecoveryAt, now)) {
        return { kind: 'resume', attempt: attempts, gate };
      }
      return { kind: 'wait', attempts, until: step.until, gate };
  }
}

/**
 * The last force was claimed (attempts, last-recovery-at) but its final write, requestedAt = the
 * same timestamp, is not there yet. True while the claim is in place, i.e. a resume may be due
 * once RESUME_SETTLE_MS has passed.
 *
 * A requestedAt later than the claim is foreign (flux reconcile, a person, another tool wrote it
 * after we claimed): source-watcher has been asked to reconcile already, and a resume would be an
 * uncounted extra force that can overwrite its in-progress Ready. Only a requestedAt that is
 * missing, unreadable or older than the claim marks our force unfinished (docs/adr/0021).
 */
export function forceUnfinished(
  ag: ArtifactGenerator,
  attempts: number,
  lastRecoveryAt: number | null,
): boolean {
  if (attempts < 1 || lastRecoveryAt === null) return false;
  const requested = parseTime(ownValue(ag.metadata?.annotations, ANNOTATION_REQUESTED_AT));
  return requested === null || requested < lastRecoveryAt;
}

function resumeDue(
  ag: ArtifactGenerator,
  attempts: number,
  lastRecoveryAt: number | null,
  now: number,
): boolean {
  return (
    lastRecoveryAt !== null &&
    forceUnfinished(ag, attempts, lastRecoveryAt) &&
    now - lastRecoveryAt >= RESUME_SETTLE_MS
  );
}

/** An asked-for claim younger than this may still be in flight (docs/adr/0044). */
export const ASKED_RESUME_SETTLE_MS = 2_000;

/**
 * What a force event finds when the force it asked for (it saw `askedAttempts`, so it asked for
 * attempt askedAttempts + 1) is claimed but unfinished while `decision` says wait: the event is the
 * claim's own, redelivered after the claimer's later writes failed, or a duplicate of it.
 * - 'resume': the claim is ASKED_RESUME_SETTLE_MS old; finish it now rather than after
 *   RESUME_SETTLE_MS, which keeps only unrelated events off a force that may be in flight. A
 *   resume racing a slow claimer is safe: both write with resourceVersion preconditions and set
 *   requestedAt to the claim's own timestamp.
 * - 'in-flight': younger; the claimer may still be writing. The event is answered "later", so its
 *   redelivery finishes the force if the claimer did not.
 * - null: anything else (another attempt, a finished force, a foreign requestedAt, no claim).
 */
export function unfinishedAskedForce(
  decision: Decision,
  ag: ArtifactGenerator,
  now: number,
  cfg: RecoveryConfig,
  askedAttempts: number,
): 'resume' | 'in-flight' | null {
  if (decision.kind !== 'wait') return null;
  const { attempts, lastRecoveryAt } = readTracking(ag, now, cfg);
  if (attempts !== askedAttempts + 1 || lastRecoveryAt === null) return null;
  if (!forceUnfinished(ag, attempts, lastRecoveryAt)) return null;
  return now - lastRecoveryAt >= ASKED_RESUME_SETTLE_MS ? 'resume' : 'in-flight';
}

/** The decision asks for the AG's history before it can be final (see Decision 'healthy'). */
export function needsHistory(decision: Decision): boolean {
  return decision.kind === 'healthy' && decision.needsHistory;
}
