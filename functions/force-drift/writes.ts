// The force protocol (docs/adr/0008-force-protocol.md):
//   1. claim: attempts+1 and last-recovery-at=now, with a resourceVersion precondition. Exactly one
//      replica wins a window; the count advances before anything else can fail.
//   2. Ready=False/SourceWatcherRecoveryForced on the status subresource, with a precondition,
//      replacing only the Ready entry (every other condition kept exactly as read).
//   3. requestedAt = the claim's timestamp, which also marks the force complete.
// A force interrupted after step 1 is finished later by a `resume` decision.

import {
  ANNOTATION_REQUESTED_AT,
  claimAnnotations,
  clearTrackingPatch,
  gateReason,
  hasMarker,
  markerConditions,
  readTracking,
  requestedAtFor,
  stallSeconds,
  type GateReason,
} from '../../shared/core/index.js';
import type { AgRef, ArtifactGenerator } from '../../shared/core/objects/types.js';
import { isKubeError } from '../../shared/kube/errors.js';
import { AGAIN, redecide } from '../../shared/kube/redecide.js';
import type { Logger } from '../../shared/runtime/logger.js';
import type { ForceDriftDeps } from './deps.js';

export type StepResult =
  | 'forced'
  | 'resumed'
  | 'cleared'
  | 'superseded'
  | 'conflict'
  | 'observed'
  | 'nothing-to-do'
  | 'waiting'
  /** The force the event asked for is claimed and may still be in flight (answered later). */
  | 'in-flight'
  | 'given-up'
  | 'deleting'
  | 'owner-deleting';

/** Status-write retries after a conflict, while the claim is still ours. */
const STATUS_ROUNDS = 3;

export async function forceAttempt(
  ag: ArtifactGenerator,
  ref: AgRef,
  attempt: number,
  gate: GateReason,
  now: number,
  deps: ForceDriftDeps,
  log: Logger,
): Promise<StepResult> {
  let claimed: ArtifactGenerator;
  try {
    claimed = await deps.kube.patchArtifactGeneratorAnnotations(
      ref,
      claimAnnotations(attempt, now),
      {
        resourceVersion: rvOf(ag),
      },
    );
  } catch (e) {
    if (isKubeError(e, 'Conflict')) return 'conflict';
    throw e;
  }
  log.info({ decision: 'force', attempt, gate }, 'claimed attempt');
  const result = await markAndBump(claimed, ref, now, deps, log);
  if (result === 'done') {
    log.info({ decision: 'force', attempt, gate }, 'forced rebuild');
    deps.metrics?.forced(ref, attempt);
    return 'forced';
  }
  return result;
}

export async function resumeForce(
  ag: ArtifactGenerator,
  ref: AgRef,
  now: number,
  deps: ForceDriftDeps,
  log: Logger,
): Promise<StepResult> {
  const { attempts, lastRecoveryAt } = readTracking(ag, now, deps.config.recovery);
  if (lastRecoveryAt === null) return 'nothing-to-do';
  const result = await markAndBump(ag, ref, lastRecoveryAt, deps, log, now);
  if (result === 'done') {
    log.info({ decision: 'resume', attempt: attempts }, 'finished interrupted force');
    return 'resumed';
  }
  return result;
}

export async function clearTracking(
  ag: ArtifactGenerator,
  ref: AgRef,
  deps: ForceDriftDeps,
  log: Logger,
): Promise<StepResult> {
  try {
    await deps.kube.patchArtifactGeneratorAnnotations(ref, clearTrackingPatch(), {
      resourceVersion: rvOf(ag),
    });
  } catch (e) {
    if (isKubeError(e, 'Conflict')) return 'conflict';
    throw e;
  }
  log.info({ decision: 'clear-tracking' }, 'recovered; tracking cleared');
  const now = deps.clock.now();
  deps.metrics?.recovered(ref, stallSeconds(readTracking(ag, now, deps.config.recovery), now));
  return 'cleared';
}

/**
 * Steps 2 and 3 for the claim stamped `claimAt`. `now` (defaults to claimAt) stamps the marker.
 * Stops ('superseded') when a re-read shows the claim is no longer ours or the AG is healthy again.
 */
async function markAndBump(
  ag: ArtifactGenerator,
  ref: AgRef,
  claimAt: number,
  deps: ForceDriftDeps,
  log: Logger,
  now: number = claimAt,
): Promise<'done' | 'superseded'> {
  let current = ag;
  const marked = await redecide<'marked' | 'superseded'>(
    async (round) => {
      if (hasMarker(current)) return 'marked';
      try {
        current = await deps.kube.patchArtifactGeneratorConditions(
          ref,
          markerConditions(current, now),
          { resourceVersion: rvOf(current) },
        );
        return hasMarker(current) ? 'marked' : AGAIN;
      } catch (e) {
        if (!isKubeError(e, 'Conflict')) throw e;
        current = await deps.kube.getArtifactGenerator(ref);
        const stillOurs =
          readTracking(current, now, deps.config.recovery).lastRecoveryAt === claimAt;
        if (!stillOurs || gateReason(current, now, deps.config.recovery) === null) {
          log.info({ round }, 'claim superseded before the status write');
          return 'superseded';
        }
        return AGAIN;
      }
    },
    { rounds: STATUS_ROUNDS, exhausted: () => (hasMarker(current) ? 'marked' : 'superseded') },
  );
  if (marked === 'superseded') return 'superseded';
  await deps.kube.patchArtifactGeneratorAnnotations(ref, {
    [ANNOTATION_REQUESTED_AT]: requestedAtFor(claimAt),
  });
  return 'done';
}

function rvOf(ag: ArtifactGenerator): string {
  const rv = ag.metadata?.resourceVersion;
  // An object read from the API server always has one; without it no precondition can be made.
  if (rv === undefined || rv === '') throw new Error('object has no resourceVersion');
  return rv;
}
