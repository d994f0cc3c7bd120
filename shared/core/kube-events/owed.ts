// Owed Kubernetes Events (docs/adr/0061-owed-events.md): a recovery step is done before its Event
// is written, so an Event write that fails (a degraded API server) leaves the step recorded on the
// AG with no Event. The delivery then answers 503; its redelivery writes the Event it still owes,
// create-only (an Event of the same name means it was written: nothing more), for a bounded time
// after the step. Pure: time is passed in.

import type { RecoveryConfig } from '../config/recovery-config.js';
import { forceUnfinished } from '../decision/decide.js';
import type { EventStep } from './vocabulary.js';
import { forcedStep } from './steps.js';
import { readTracking } from '../decision/tracking.js';
import type { ArtifactGenerator } from '../objects/types.js';

/**
 * How long after its step an unwritten Event is still owed: 250 s, so that a step taken on the
 * Broker's first try is written by any of its next seven (1 + 2 + … + 64 = 127 s later), and a step
 * taken on the ninth try (255 s after the first) is past it by the tenth and last (511 s, ADR 49):
 * the redelivery that finds an owed Event older than this drops it (a log line) and answers 200, so
 * an owed Event never dead-letters its action. 255 s would add the ninth try for the first step and
 * let a ninth-try step's last try answer 503.
 */
export const OWED_EVENT_MAX_AGE_MS = 250_000;

/** Whether an Event owed since its step at `stepAt` is still to be written at `now`. */
export function owedEventDue(stepAt: number, now: number): 'write' | 'expired' {
  return now - stepAt > OWED_EVENT_MAX_AGE_MS ? 'expired' : 'write';
}

export type AskedStep =
  | { kind: 'recorded'; step: EventStep; stepAt: number }
  | { kind: 'none'; why: 'not-a-force' | 'not-asked' | 'unfinished' | 'expired' };

/**
 * The finished force that a force action asked for, as the AG records it: the action asked for
 * attempt N+1 (its `attempts` is N), and the AG's tracking says attempt N+1, claimed at T, with
 * `requestedAt` at or after T (finished). Its Event may be owed: the force's Event is named by
 * (uid, reason, action, T), so a writer that did not take the step (another replica, a restart)
 * names it as the forcer did. What opened the gate is not on the AG: the step carries no gate, and
 * its note says nothing of how the stall was found. Past OWED_EVENT_MAX_AGE_MS: `expired`.
 */
export function askedStepOnAg(
  ag: ArtifactGenerator,
  now: number,
  cfg: RecoveryConfig,
  askedAttempts: number | null,
): AskedStep {
  if (askedAttempts === null) return { kind: 'none', why: 'not-a-force' };
  const { attempts, lastRecoveryAt } = readTracking(ag, now, cfg);
  if (attempts !== askedAttempts + 1 || lastRecoveryAt === null) {
    return { kind: 'none', why: 'not-asked' };
  }
  if (forceUnfinished(ag, attempts, lastRecoveryAt)) return { kind: 'none', why: 'unfinished' };
  if (owedEventDue(lastRecoveryAt, now) === 'expired') return { kind: 'none', why: 'expired' };
  return {
    kind: 'recorded',
    step: forcedStep(attempts, lastRecoveryAt, cfg),
    stepAt: lastRecoveryAt,
  };
}
