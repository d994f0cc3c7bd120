// Reading and replacing Kubernetes conditions without disturbing the ones we do not own.

import { isFiniteNumber, isPlainObject } from '../codecs/plain.js';
import type { ArtifactGenerator, Condition } from './types.js';

export const READY = 'Ready';
/** Our marker on the AG's Ready: makes source-watcher see drift. Never shown on a PackageSource. */
export const REASON_FORCED = 'SourceWatcherRecoveryForced';
/** PackageSource Ready while a force or a backoff window is open. */
export const REASON_AWAITING = 'AwaitingSourceWatcherRecovery';
/** PackageSource Ready after the last attempt's window closed without a rebuild. */
export const REASON_STALLED = 'SourceWatcherStalled';

/** The Kubernetes condition reason pattern. */
export const REASON_PATTERN = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
export const MAX_REASON_LENGTH = 1024;
export const MAX_MESSAGE_LENGTH = 32768;

/**
 * The first condition of `type` in a list, as a new object holding only its well-typed fields.
 * Tolerates a missing list, a non-array and junk entries.
 */
export function findCondition(conditions: unknown, type: string): Condition | undefined {
  if (!Array.isArray(conditions)) return undefined;
  for (const entry of conditions as unknown[]) {
    if (isPlainObject(entry) && entry['type'] === type) return cleanCondition(entry);
  }
  return undefined;
}

/** The AG's Ready condition, if any. */
export function readyOf(ag: ArtifactGenerator): Condition | undefined {
  return findCondition(ag.status?.conditions, READY);
}

/**
 * A new list: every other condition kept exactly as read and in order; the first entry of the same
 * type replaced in place (later duplicates of that type dropped), or `next` appended.
 */
export function replaceCondition(
  conditions: Condition[] | undefined,
  next: Condition,
): Condition[] {
  const out: Condition[] = [];
  let placed = false;
  const list: unknown = conditions;
  for (const entry of Array.isArray(list) ? (list as Condition[]) : []) {
    if (isPlainObject(entry) && entry.type === next.type) {
      if (!placed) out.push(next);
      placed = true;
    } else {
      out.push(entry);
    }
  }
  if (!placed) out.push(next);
  return out;
}

/** Field-by-field equality of the parts of a condition the API server stores. */
export function sameCondition(a?: Condition, b?: Condition): boolean {
  if (a === undefined || b === undefined) return a === b;
  return (
    a.type === b.type &&
    a.status === b.status &&
    a.reason === b.reason &&
    a.message === b.message &&
    a.lastTransitionTime === b.lastTransitionTime &&
    a.observedGeneration === b.observedGeneration
  );
}

/** Keeps only the well-typed fields of a condition-like object. */
export function cleanCondition(entry: Record<string, unknown>): Condition {
  const out: Condition = {};
  const { type, status, reason, message, lastTransitionTime, observedGeneration } = entry;
  if (typeof type === 'string') out.type = type;
  if (typeof status === 'string') out.status = status;
  if (typeof reason === 'string') out.reason = reason;
  if (typeof message === 'string') out.message = message;
  if (typeof lastTransitionTime === 'string') out.lastTransitionTime = lastTransitionTime;
  if (isFiniteNumber(observedGeneration)) out.observedGeneration = observedGeneration;
  return out;
}

export function isValidReason(reason: unknown): reason is string {
  return (
    typeof reason === 'string' && reason.length <= MAX_REASON_LENGTH && REASON_PATTERN.test(reason)
  );
}

/** Caps a message at MAX_MESSAGE_LENGTH UTF-16 units without splitting a surrogate pair. */
export function capMessage(message: string): string {
  if (message.length <= MAX_MESSAGE_LENGTH) return message;
  let cut = MAX_MESSAGE_LENGTH;
  const last = message.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut -= 1;
  return message.slice(0, cut);
}
