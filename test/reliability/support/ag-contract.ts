// What the contract says about an ArtifactGenerator at any moment, and a projection of its
// recovery state that two AGs with different names can be compared on.

import {
  ANNOTATION_ATTEMPTS,
  ANNOTATION_LAST_RECOVERY_AT,
  ANNOTATION_REQUESTED_AT,
  hasMarker,
  parseAttempts,
  parseTime,
  readyOf,
  REASON_FORCED,
} from '../../../shared/core/index.js';
import type { ArtifactGenerator } from '../../../shared/core/objects/types.js';

const annotationsOf = (ag: ArtifactGenerator): Record<string, string> =>
  ag.metadata?.annotations ?? {};

export function attemptsOf(ag: ArtifactGenerator): number {
  return parseAttempts(annotationsOf(ag)[ANNOTATION_ATTEMPTS]);
}

/**
 * Violations visible on one AG: a marker without a claim; a completed bump while Ready is still the
 * lost Unknown (the bump went out before the marker: source-watcher would see no drift).
 */
export function agViolations(ag: ArtifactGenerator): string[] {
  const out: string[] = [];
  const a = annotationsOf(ag);
  const ready = readyOf(ag);
  const claimed = attemptsOf(ag) >= 1 && parseTime(a[ANNOTATION_LAST_RECOVERY_AT]) !== null;
  if (ready?.reason === REASON_FORCED && !claimed) out.push('marker without a claim');
  const last = parseTime(a[ANNOTATION_LAST_RECOVERY_AT]);
  if (
    claimed &&
    last !== null &&
    parseTime(a[ANNOTATION_REQUESTED_AT]) === last &&
    !hasMarker(ag) &&
    ready?.status === 'Unknown'
  ) {
    out.push('requestedAt bumped for a claim whose marker is missing');
  }
  return out;
}

/** Attempts never decrease and never jump by more than one within a run. */
export function attemptHistoryViolations(history: readonly ArtifactGenerator[]): string[] {
  const out: string[] = [];
  for (let i = 1; i < history.length; i++) {
    const before = attemptsOf(history[i - 1] as ArtifactGenerator);
    const after = attemptsOf(history[i] as ArtifactGenerator);
    if (after < before) out.push(`attempts decreased from ${before} to ${after}`);
    if (after > before + 1) out.push(`attempts jumped from ${before} to ${after}`);
  }
  return out;
}

/**
 * The recovery state of an AG, free of names, resourceVersions and our own marker's timestamp.
 * `moments` are the clock values of the deliveries: a claim made at any of them reads the same
 * (a fault can move the force from the first delivery to the redelivery; that is not a difference).
 */
export function recoveryProjection(ag: ArtifactGenerator, moments: readonly number[]): unknown {
  const a = { ...annotationsOf(ag) };
  const symbolic = (text: string | undefined): string | undefined => {
    const t = parseTime(text);
    return t !== null && moments.includes(t) ? '<a delivery moment>' : text;
  };
  const ready = readyOf(ag);
  const others = (ag.status?.conditions ?? []).filter((c) => c.type !== 'Ready');
  return {
    attempts: a[ANNOTATION_ATTEMPTS],
    lastRecoveryAt: symbolic(a[ANNOTATION_LAST_RECOVERY_AT]),
    requestedAt: symbolic(a[ANNOTATION_REQUESTED_AT]),
    forceComplete: a[ANNOTATION_REQUESTED_AT] === a[ANNOTATION_LAST_RECOVERY_AT],
    ready:
      ready === undefined
        ? null
        : {
            status: ready.status,
            reason: ready.reason,
            message: ready.message,
            observedGeneration: ready.observedGeneration,
            // A resumed force stamps the marker when it is written, not when it was claimed.
            ...(ready.reason === REASON_FORCED
              ? {}
              : { lastTransitionTime: ready.lastTransitionTime }),
          },
    otherConditions: others,
    inventory: ag.status?.inventory,
    observedSourcesDigest: ag.status?.observedSourcesDigest,
    generation: ag.metadata?.generation,
  };
}
