// The series decision (bump or skip) and the per-cycle bound, table first, then fast-check.

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  buildEvent,
  buildEvents,
  maxEventObjectsPerCycle,
  MAX_SERIES_COUNT,
  nextSeries,
  seriesCount,
  type EventStep,
  type EventSubject,
} from '../../../shared/core/index.js';
import { STALL } from './fixtures.js';

const NOW = STALL + 60_000;
const AT = '2026-11-29T16:31:00.000000Z';

describe('nextSeries', () => {
  it.each<[string, unknown, ReturnType<typeof nextSeries>]>([
    ['a first repeat starts the series at 2', { note: 'x' }, bump(2)],
    ['a series counts on', { series: { count: 4, lastObservedTime: 'x' } }, bump(5)],
    ['a broken series counts as one occurrence', { series: { count: 'many' } }, bump(2)],
    ['a series below 2 counts as one occurrence', { series: { count: 1 } }, bump(2)],
    ['the bound: no write', { series: { count: MAX_SERIES_COUNT } }, skip('bound')],
    ['past the bound: no write', { series: { count: 10_000 } }, skip('bound')],
    ['nothing readable', null, skip('unreadable')],
  ])('%s', (_, existing, expected) => {
    expect(nextSeries(existing, NOW)).toEqual(expected);
  });

  it('seriesCount reads 1 without a series', () => {
    expect(seriesCount(undefined)).toBe(1);
    expect(seriesCount({ count: 7 })).toBe(7);
  });
});

function bump(count: number): ReturnType<typeof nextSeries> {
  return { kind: 'bump', series: { count, lastObservedTime: AT } };
}
function skip(why: 'bound' | 'unreadable'): ReturnType<typeof nextSeries> {
  return { kind: 'skip', why };
}

// A model of the API server's Event store and of any number of replicas reporting the steps of
// one recovery cycle, each report possibly duplicated (redelivery, racing replicas): create, and
// on AlreadyExists bump the series as the recorder does.
interface Stored {
  count: number;
}

/** Every Event of the step (the verdict: the AG's and the PackageSource's), keyed ns/name. */
function report(store: Map<string, Stored>, step: EventStep, subject: EventSubject, now: number) {
  for (const e of buildEvents(step, subject, 'replica', now)) {
    const key = `${e.metadata.namespace}/${e.metadata.name}`;
    const existing = store.get(key);
    if (existing === undefined) {
      store.set(key, { count: 1 });
      continue;
    }
    const next = nextSeries({ series: { count: existing.count } }, now);
    if (next.kind === 'bump') existing.count = next.series.count;
  }
}

const keysOf = (step: EventStep) =>
  buildEvents(step, SUBJECT, 'x', NOW).map((e) => `${e.metadata.namespace}/${e.metadata.name}`);

const SUBJECT: EventSubject = { namespace: 'ns', name: 'ag', uid: 'u' };

const cycleArb = fc.record({
  maxAttempts: fc.integer({ min: 1, max: 10 }),
  forces: fc.integer({ min: 0, max: 10 }),
  resumedEach: fc.array(fc.boolean(), { minLength: 10, maxLength: 10 }),
  stalled: fc.boolean(),
  recovered: fc.boolean(),
  copies: fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 30, maxLength: 30 }),
  order: fc.array(fc.nat(), { minLength: 0, maxLength: 300 }),
});

describe('aggregation and the per-cycle bound (property)', () => {
  it('one object per step, counts add up to the reports up to the bound, objects within the bound', () => {
    fc.assert(
      fc.property(cycleArb, (c) => {
        const forces = Math.min(c.forces, c.maxAttempts);
        const steps: EventStep[] = [];
        for (let a = 1; a <= forces; a++) {
          const claimAt = STALL + a * 60_000;
          steps.push({ kind: 'forced', attempt: a, maxAttempts: c.maxAttempts, claimAt });
          if (c.resumedEach[a - 1] === true) {
            steps.push({ kind: 'resumed', attempt: a, maxAttempts: c.maxAttempts, claimAt });
          }
        }
        const lastClaim = forces > 0 ? STALL + forces * 60_000 : null;
        if (c.stalled) {
          steps.push({
            kind: 'stalled',
            attempts: forces,
            claimAt: lastClaim,
            packageSource: 'p',
            packageSourceUid: 'ps-u',
          });
        }
        if (c.recovered) {
          steps.push({
            kind: 'recovered',
            attempts: forces,
            claimAt: lastClaim,
            readyStatus: 'True',
            readyReason: 'Succeeded',
          });
        }
        // Every step reported copies[i] times, interleaved in an arbitrary order.
        const reports: number[] = steps.flatMap((_, i) => Array<number>(c.copies[i] ?? 1).fill(i));
        for (let k = 0; k < c.order.length && reports.length > 1; k++) {
          const i = k % reports.length;
          const j = (c.order[k] ?? 0) % reports.length;
          [reports[i], reports[j]] = [reports[j] as number, reports[i] as number];
        }
        const store = new Map<string, Stored>();
        reports.forEach((i, n) => report(store, steps[i] as EventStep, SUBJECT, NOW + n));

        // One object per step, plus the verdict's Event on the PackageSource.
        expect(store.size).toBe(steps.length + (c.stalled ? 1 : 0));
        expect(store.size).toBeLessThanOrEqual(maxEventObjectsPerCycle(c.maxAttempts));
        steps.forEach((s, i) => {
          const keys = keysOf(s);
          expect(keys).toHaveLength(s.kind === 'stalled' ? 2 : 1);
          for (const key of keys) {
            expect(store.get(key)?.count).toBe(Math.min(c.copies[i] ?? 1, MAX_SERIES_COUNT));
          }
        });
      }),
    );
  });

  it('the name is a function of (uid, reason, action, stamp) only', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: 0, max: 1e12 }),
        fc.string(),
        fc.string(),
        fc.integer({ min: 0, max: 1e12 }),
        (attempt, claimAt, instA, instB, later) => {
          const step: EventStep = { kind: 'forced', attempt, maxAttempts: 100, claimAt };
          const a = buildEvent(step, SUBJECT, instA || 'a', claimAt);
          const b = buildEvent(step, SUBJECT, instB || 'b', claimAt + later);
          expect(a.metadata.name).toBe(b.metadata.name);
        },
      ),
    );
  });
});
