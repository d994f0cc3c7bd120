// What a force writes on the AG. Pure: the caller performs the writes.

import { READY, readyOf, REASON_FORCED, replaceCondition } from '../objects/conditions.js';
import { isFiniteNumber } from '../codecs/plain.js';
import { formatTimeNano, formatTimeSeconds } from '../codecs/time.js';
import type { ArtifactGenerator, Condition } from '../objects/types.js';

/** Ready=False/SourceWatcherRecoveryForced on the current generation: source-watcher sees drift. */
export function markerCondition(ag: ArtifactGenerator, now: number): Condition {
  const generation = ag.metadata?.generation;
  const condition: Condition = {
    type: READY,
    status: 'False',
    reason: REASON_FORCED,
    message:
      `forced by source-watcher-recovery: Ready was lost on generation ` +
      `${isFiniteNumber(generation) ? generation : 'unknown'} (fluxcd/pkg#934); requesting a rebuild`,
    lastTransitionTime: formatTimeSeconds(now),
  };
  if (isFiniteNumber(generation)) condition.observedGeneration = generation;
  return condition;
}

/** The AG's conditions with Ready replaced by the marker; every other condition untouched. */
export function markerConditions(ag: ArtifactGenerator, now: number): Condition[] {
  return replaceCondition(ag.status?.conditions, markerCondition(ag, now));
}

/** The marker is in place on the current generation. */
export function hasMarker(ag: ArtifactGenerator): boolean {
  const ready = readyOf(ag);
  const generation = ag.metadata?.generation;
  return (
    ready?.reason === REASON_FORCED &&
    ready.status === 'False' &&
    isFiniteNumber(generation) &&
    ready.observedGeneration === generation
  );
}

/** The requestedAt value a force writes last: the same string as last-recovery-at. */
export function requestedAtFor(lastRecoveryAt: number): string {
  return formatTimeNano(lastRecoveryAt);
}
