// The deliveries' deadlines on one timer (shared/runtime/delivery-deadlines.ts): each delivery
// expires once its time has passed on the monotonic clock, in the order they started, never when
// it ended first; however many deliveries run, at most one timer of the clock is armed, and none
// once no delivery is left.

import { describe, expect, it } from 'vitest';
import { DeadlineError } from '../../../shared/runtime/clock.js';
import { deliveryDeadlines } from '../../../shared/runtime/delivery-deadlines.js';
import { SettableClock } from '../../harness/functions.js';

const MS = 1000;

/** A script: at each step the clock moves `advance` ms, then deliveries start or end. */
interface Step {
  readonly advance: number;
  readonly start?: readonly string[];
  readonly end?: readonly string[];
  /** Deliveries expired by the end of this step, in order (cumulative). */
  readonly expired: readonly string[];
}

const cases: [string, readonly Step[]][] = [
  [
    'one delivery expires exactly at its deadline, not a millisecond before',
    [
      { advance: 0, start: ['a'], expired: [] },
      { advance: MS - 1, expired: [] },
      { advance: 1, expired: ['a'] },
    ],
  ],
  [
    'a delivery that ends first never expires',
    [
      { advance: 0, start: ['a'], expired: [] },
      { advance: 10, end: ['a'], expired: [] },
      { advance: MS * 3, expired: [] },
    ],
  ],
  [
    'deliveries expire in the order they started, each at its own time',
    [
      { advance: 0, start: ['a'], expired: [] },
      { advance: 300, start: ['b'], expired: [] },
      { advance: 300, start: ['c'], expired: [] },
      { advance: 400, expired: ['a'] },
      { advance: 299, expired: ['a'] },
      { advance: 1, expired: ['a', 'b'] },
      { advance: 300, expired: ['a', 'b', 'c'] },
    ],
  ],
  [
    'the first one ending early does not delay or drop the next (the timer re-arms)',
    [
      { advance: 0, start: ['a'], expired: [] },
      { advance: 500, start: ['b'], end: ['a'], expired: [] },
      { advance: 500, expired: [] },
      { advance: 499, expired: [] },
      { advance: 1, expired: ['b'] },
    ],
  ],
  [
    'deliveries started after an idle spell get their full time',
    [
      { advance: 0, start: ['a'], end: ['a'], expired: [] },
      { advance: MS * 5, start: ['b'], expired: [] },
      { advance: MS - 1, expired: [] },
      { advance: 1, expired: ['b'] },
    ],
  ],
];

describe('delivery deadlines on one timer', () => {
  it.each(cases)('%s', (_what, steps) => {
    const clock = new SettableClock(1_000_000);
    const deadlines = deliveryDeadlines(clock, MS);
    const expired: string[] = [];
    const reasons: unknown[] = [];
    const stops = new Map<string, () => void>();
    for (const step of steps) {
      clock.advance(step.advance);
      for (const name of step.start ?? []) {
        stops.set(
          name,
          deadlines.start((reason) => {
            expired.push(name);
            reasons.push(reason);
          }),
        );
      }
      for (const name of step.end ?? []) stops.get(name)?.();
      expect(expired).toEqual(step.expired);
      expect(clock.pendingDeadlines).toBeLessThanOrEqual(1);
    }
    for (const r of reasons) expect(r).toEqual(new DeadlineError(MS));
  });

  it('a thousand overlapping deliveries that end in time arm one timer; idle, none is left', () => {
    const clock = new SettableClock(0);
    const deadlines = deliveryDeadlines(clock, MS);
    let expired = 0;
    // Two in flight at a time (as under load): the Set never empties until the last one ends.
    let previous = deadlines.start(() => expired++);
    for (let i = 0; i < 1000; i++) {
      const stop = deadlines.start(() => expired++);
      clock.advance(1);
      previous();
      previous = stop;
      expect(clock.pendingDeadlines).toBe(1);
    }
    previous();
    // No delivery left: the timer is cleared, so a stopped function leaves nothing on its clock.
    expect(clock.pendingDeadlines).toBe(0);
    clock.advance(MS * 2);
    expect(expired).toBe(0);
  });

  it('a delivery that ends alone leaves no timer armed', () => {
    const clock = new SettableClock(0);
    const deadlines = deliveryDeadlines(clock, MS);
    const stop = deadlines.start(() => undefined);
    expect(clock.pendingDeadlines).toBe(1);
    stop();
    expect(clock.pendingDeadlines).toBe(0);
  });
});
