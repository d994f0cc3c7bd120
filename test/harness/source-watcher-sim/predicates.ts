// Which watch updates enqueue an AG: source-watcher's GenerationChangedPredicate OR
// ReconcileRequestedPredicate. Adds and deletes always enqueue. Status-only writes and other
// annotation changes do not.

import { REQUESTED_AT_ANNOTATION } from './constants.js';
import type { SimAg } from './types.js';

function requestedAt(ag: SimAg): string | undefined {
  return ag.metadata.annotations?.[REQUESTED_AT_ANNOTATION];
}

export function shouldEnqueueUpdate(oldAg: SimAg, newAg: SimAg): boolean {
  if (oldAg.metadata.generation !== newAg.metadata.generation) return true;
  const next = requestedAt(newAg);
  return next !== undefined && next !== requestedAt(oldAg);
}
