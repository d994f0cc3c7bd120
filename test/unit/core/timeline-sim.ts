// A small simulation of one AG over time for the property tests: a driver that applies each
// decision the way force-drift does, and a source-watcher that answers a force in a chosen way.

import {
  ANNOTATION_REQUESTED_AT,
  claimAnnotations,
  clearTrackingPatch,
  decide,
  desiredPackageSourceReady,
  hasMarker,
  markerConditions,
  nextCheckAt,
  readTracking,
  replaceCondition,
  requestedAtFor,
  type ArtifactGenerator,
  type Condition,
  type Decision,
  type PackageSource,
  type RecoveryConfig,
} from '../../../shared/core/index.js';
import { makeAg, makePs, STALL } from './fixtures.js';
import { progressing, reconciliationFailed, succeeded } from '../../support/conditions.js';

/**
 * How source-watcher reacts to a completed force: not at all, a lost verdict again, honestly, or
 * (under API-server overload) an honest failure whose rate-limited retry 750 ms later loses its
 * verdict again.
 */
export type SwAnswer = 'none' | 'progressing' | 'true' | 'fail-then-stall';

/** Flux's controller rate limiter: the first retry after a failed reconcile. */
export const SW_RETRY_MS = 750;
/** Which of a force's writes are lost: none, the final requestedAt, or marker and requestedAt. */
export type WriteLoss = 'ok' | 'lose-requested-at' | 'lose-marker-and-requested-at';

export interface Scenario {
  cfg: RecoveryConfig;
  /** Per force (by attempt number - 1; the last entry repeats): answer and its delay. */
  answers: { answer: SwAnswer; delayMs: number }[];
  /** Per force (by attempt number - 1; missing means 'ok'). */
  losses: WriteLoss[];
  /** Extra events (ApiServerSource, sweeps) at these offsets from the stall. */
  extraEventsMs: number[];
}

export interface Step {
  now: number;
  /** The AG as the decision saw it. */
  ag: ArtifactGenerator;
  ps: PackageSource;
  decision: Decision;
  attempts: number;
  /** The AG had an honest Ready verdict from source-watcher at this step. */
  honest: boolean;
  next: number | null;
}

export interface Run {
  steps: Step[];
  forces: { at: number; attempt: number }[];
  giveUpAt: number | null;
}

const MAX_STEPS = 2000;

/** Source-watcher never answers a force. */
export const NO_ANSWER: Scenario['answers'][number] = { answer: 'none', delayMs: 0 };

/** A run with these answers, no lost writes and no extra events. */
export const answered = (cfg: RecoveryConfig, answers: Scenario['answers']): Run =>
  simulate({ cfg, answers, losses: [], extraEventsMs: [] });

export function simulate(s: Scenario): Run {
  let ag = makeAg();
  let ps = makePs(progressing(STALL));
  let now = STALL;
  let followUp: number | null = nextCheckAt(ag, now, s.cfg);
  let sw: { at: number; answer: SwAnswer } | null = null;
  let honest = false;
  const extra = s.extraEventsMs.map((ms) => STALL + ms).sort((a, b) => a - b);
  const steps: Step[] = [];
  const forces: Run['forces'] = [];
  let giveUpAt: number | null = null;

  for (let i = 0; i < MAX_STEPS; i++) {
    const candidates = [followUp, sw?.at ?? null, extra.find((t) => t >= now) ?? null].filter(
      (t): t is number => t !== null && t >= now,
    );
    if (candidates.length === 0) break;
    now = Math.min(...candidates);
    while (extra.length > 0 && (extra[0] ?? Infinity) <= now) extra.shift();

    if (sw !== null && sw.at === now) {
      const generation = ag.metadata?.generation ?? 1;
      const answer: SwAnswer = sw.answer;
      const ready =
        answer === 'true'
          ? succeeded(now, generation)
          : answer === 'fail-then-stall'
            ? reconciliationFailed(now, generation)
            : progressing(now, generation);
      honest = answer === 'true' || answer === 'fail-then-stall';
      ag = withConditions(ag, replaceCondition(ag.status?.conditions, ready));
      sw = answer === 'fail-then-stall' ? { at: now + SW_RETRY_MS, answer: 'progressing' } : null;
    }

    const seen = ag;
    const decision = decide(ag, now, s.cfg);
    const attempts = readTracking(ag, now, s.cfg).attempts;

    // surface-stalled: keep the PackageSource Ready in line with the AG.
    const desired = desiredPackageSourceReady(ag, ps, now, s.cfg);
    if (desired !== null) ps = withPsReady(ps, desired);

    switch (decision.kind) {
      case 'force': {
        const loss = s.losses[decision.attempt - 1] ?? 'ok';
        ag = withAnnotations(ag, claimAnnotations(decision.attempt, now));
        if (loss !== 'lose-marker-and-requested-at') {
          ag = withConditions(ag, markerConditions(ag, now));
        }
        if (loss === 'ok')
          ag = withAnnotations(ag, { [ANNOTATION_REQUESTED_AT]: requestedAtFor(now) });
        forces.push({ at: now, attempt: decision.attempt });
        honest = false;
        if (loss === 'ok') sw = scheduleAnswer(s, decision.attempt, now);
        break;
      }
      case 'resume': {
        const last = readTracking(ag, now, s.cfg).lastRecoveryAt ?? now;
        if (!hasMarker(ag)) ag = withConditions(ag, markerConditions(ag, now));
        ag = withAnnotations(ag, { [ANNOTATION_REQUESTED_AT]: requestedAtFor(last) });
        sw = scheduleAnswer(s, decision.attempt, now);
        break;
      }
      case 'healthy':
        if (decision.clearTracking) ag = withAnnotations(ag, clearTrackingPatch());
        break;
      case 'give-up':
        giveUpAt ??= now;
        break;
      case 'wait':
      case 'ignore':
        break;
    }

    followUp = nextCheckAt(ag, now, s.cfg);
    steps.push({ now, ag: seen, ps, decision, attempts, honest, next: followUp });
    if (followUp !== null && followUp <= now) {
      throw new Error(`hot loop: next check ${followUp} not after ${now} (${decision.kind})`);
    }
  }
  return { steps, forces, giveUpAt };
}

function scheduleAnswer(
  s: Scenario,
  attempt: number,
  now: number,
): { at: number; answer: SwAnswer } | null {
  const pick = s.answers[Math.min(attempt, s.answers.length) - 1];
  if (pick === undefined || pick.answer === 'none') return null;
  return { at: now + pick.delayMs, answer: pick.answer };
}

function withConditions(ag: ArtifactGenerator, conditions: Condition[]): ArtifactGenerator {
  return { ...ag, status: { ...ag.status, conditions } };
}

function withAnnotations(
  ag: ArtifactGenerator,
  patch: Record<string, string | null>,
): ArtifactGenerator {
  const annotations: Record<string, string> = { ...ag.metadata?.annotations };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete annotations[key];
    else annotations[key] = value;
  }
  return { ...ag, metadata: { ...ag.metadata, annotations } };
}

function withPsReady(ps: PackageSource, ready: Condition): PackageSource {
  return {
    ...ps,
    status: { ...ps.status, conditions: replaceCondition(ps.status?.conditions, ready) },
  };
}
