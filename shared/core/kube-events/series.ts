// How repeats of one recovery step aggregate into one Event, without memory across replicas
// (docs/adr/0033-kubernetes-events.md). An Event's name is a function of (the AG's uid, reason,
// action, the step's stamp): every replica that reports the same step picks the same name, so the
// second create is an AlreadyExists and becomes a bump of the existing Event's series. Pure.

import type { EventSeries } from './vocabulary.js';
import { shortHash } from '../codecs/short-hash.js';
import { formatTimeMicro } from '../codecs/time.js';

/** Repeats of one step bump its series up to this count; later repeats write nothing. */
export const MAX_SERIES_COUNT = 20;
/** Longest name the API server accepts for an Event (a DNS-1123 subdomain). */
const MAX_NAME = 253;
const HASH_LENGTH = 16;

/**
 * The same name for the same (regarded object's uid, reason, action, stamp), whichever replica
 * asks: `<object name, cut>.<16 hex digits>`, a valid DNS subdomain of at most 253 characters.
 * The object is the AG, or the PackageSource (cluster-scoped: no namespace) for its verdict Event.
 */
export function eventName(
  subject: { namespace?: string; name: string; uid: string },
  reason: string,
  action: string,
  stamp: string,
): string {
  const identity = subject.uid !== '' ? subject.uid : `${subject.namespace ?? ''}/${subject.name}`;
  const hash = shortHash(`${identity}\n${reason}\n${action}\n${stamp}`);
  const prefix = subject.name.slice(0, MAX_NAME - HASH_LENGTH - 1).replace(/[^a-z0-9]+$/, '');
  return prefix === '' ? hash : `${prefix}.${hash}`;
}

export type SeriesDecision =
  { kind: 'bump'; series: EventSeries } | { kind: 'skip'; why: 'bound' | 'unreadable' };

/**
 * The step was reported again and its Event exists: its series after this observation, or skip
 * when the series has reached `max` (the bound that keeps racing replicas from a storm).
 */
export function nextSeries(
  existing: unknown,
  now: number,
  max: number = MAX_SERIES_COUNT,
): SeriesDecision {
  if (typeof existing !== 'object' || existing === null) return { kind: 'skip', why: 'unreadable' };
  const count = seriesCount((existing as { series?: unknown }).series);
  if (count >= max) return { kind: 'skip', why: 'bound' };
  return { kind: 'bump', series: { count: count + 1, lastObservedTime: formatTimeMicro(now) } };
}

/** Occurrences an Event stands for: its series count, or 1 without a (valid) series. */
export function seriesCount(series: unknown): number {
  if (typeof series !== 'object' || series === null) return 1;
  const count = (series as { count?: unknown }).count;
  return typeof count === 'number' && Number.isInteger(count) && count >= 2 ? count : 1;
}

/**
 * Event objects one AG's recovery cycle can produce: one per force and one per resumed force
 * (each attempt is one step), the two verdicts on the AG (stalled, then recovered if it heals
 * late), and the stalled verdict's Event on the PackageSource (in `default`).
 * Observe mode writes one instead: its would-force step is the same until the AG changes.
 */
export function maxEventObjectsPerCycle(maxAttempts: number): number {
  return 2 * maxAttempts + 3;
}
