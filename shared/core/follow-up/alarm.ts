// Planning of the follow-up alarm: one PingSource whose 6-field cron (seconds first, UTC) is pinned
// to the earliest moment an AG is due. Pure: the detect function does the reads and writes.
//
// Rules (docs/adr/0009-follow-up-alarm.md):
// - While the armed moment is in the future it only ever moves EARLIER. So a replica that saw a
//   future moment at or before its own due time can skip the write, and concurrent replicas can
//   never leave the alarm later than the earliest due time.
// - Once the armed moment has passed (it fired, or was missed), the sweep that follows sets it to
//   the earliest due time it found, or deletes it when nothing is due.
// - A moment is never closer than ALARM_MARGIN_MS to now: a pinned moment that passes before the
//   PingSource adapter picks the change up would fire only a year later. A write that completes
//   with less than half the margin left (a slow API server held it) is moved out again
//   (armedTooLate, docs/adr/0044).

/** Annotation on the alarm PingSource: the armed moment, RFC 3339 UTC. */
export const ANNOTATION_ALARM_MOMENT = 'cozystack.io/source-watcher-recovery-alarm-at';
export const ALARM_MARGIN_MS = 2000;

/** The moment to arm for a due time: whole seconds, at or after `due`, at least the margin ahead. */
export function alarmMoment(dueMs: number, nowMs: number): number {
  return Math.ceil(Math.max(dueMs, nowMs + ALARM_MARGIN_MS) / 1000) * 1000;
}

/**
 * The write of `momentMs` completed at `nowMs` with less than half the margin left: the PingSource
 * adapter may not pick it up before the moment passes, and then it fires only a year later.
 */
export function armedTooLate(momentMs: number, nowMs: number): boolean {
  return nowMs > momentMs - ALARM_MARGIN_MS / 2;
}

/** A 6-field cron (seconds first) that matches exactly `momentMs` in UTC (and once a year after). */
export function cronFor(momentMs: number): string {
  const d = new Date(momentMs);
  return [
    d.getUTCSeconds(),
    d.getUTCMinutes(),
    d.getUTCHours(),
    d.getUTCDate(),
    d.getUTCMonth() + 1,
    '*',
  ].join(' ');
}

/** What an event with a future due time needs done. `armed` is null when no alarm exists. */
export function planEnsure(
  armed: number | null,
  dueMs: number,
  nowMs: number,
): { kind: 'keep' } | { kind: 'set'; moment: number } {
  const moment = alarmMoment(dueMs, nowMs);
  if (armed !== null && armed > nowMs && armed <= moment) return { kind: 'keep' };
  return { kind: 'set', moment };
}

/** What a finished sweep needs done, given the earliest due time it found (null: none). */
export function planSettle(
  armed: number | null,
  exists: boolean,
  earliestDueMs: number | null,
  nowMs: number,
): { kind: 'keep' } | { kind: 'set'; moment: number } | { kind: 'delete' } {
  const armedInFuture = exists && armed !== null && armed > nowMs;
  if (earliestDueMs === null) {
    return exists && !armedInFuture ? { kind: 'delete' } : { kind: 'keep' };
  }
  const moment = alarmMoment(earliestDueMs, nowMs);
  if (armedInFuture && armed <= moment) return { kind: 'keep' };
  return { kind: 'set', moment };
}
