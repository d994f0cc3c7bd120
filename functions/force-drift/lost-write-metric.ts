// The lost write -> first force histogram (docs/adr/0059): observed by force-drift when it has
// written the first force of a stall that the verified lost-write signal opened, from when detect
// saw the lost write (the signalled event's decidedAt) to now, on the function's clock. A repeat
// force (the event asked for a later attempt, or the AG already carries forces), a force the time
// rule opened (no verified signal: no such moment) and a decidedAt that is unreadable or ahead of
// this clock by more than the skew allowed record nothing.

import type { ActionData } from '../../shared/core/objects/cloudevent-types.js';
import { parseTime, readTracking, type Signals } from '../../shared/core/index.js';
import type { ArtifactGenerator } from '../../shared/core/objects/types.js';
import type { ForceDriftDeps } from './deps.js';

/**
 * Records the seconds from the lost write to this first force. `ag` is the AG as read before the
 * force was written; the caller calls it only when the force was written ('forced').
 */
export function observeLostWriteToForce(
  ag: ArtifactGenerator,
  signals: Signals,
  data: ActionData,
  deps: Pick<ForceDriftDeps, 'clock' | 'config' | 'metrics'>,
): void {
  if (deps.metrics === undefined || !signals.lostWrite || data.attempts !== 0) return;
  const now = deps.clock.now();
  if (readTracking(ag, now, deps.config.recovery).attempts !== 0) return;
  const seenAt = parseTime(data.decidedAt);
  if (seenAt === null || seenAt - now > deps.config.recovery.clockSkewMs) return;
  deps.metrics.lostWriteToForce(Math.max(0, now - seenAt) / 1000);
}
