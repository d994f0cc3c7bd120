import { describe, expect, it } from 'vitest';
import { decideRecovery, type RecoveryStep } from '../../../shared/core/index.js';
import { CFG, MIN, SEC, STALL } from './fixtures.js';

const NOW = STALL + 30 * MIN;
const force = (attempt: number): RecoveryStep => ({ kind: 'force', attempt });
/** Wait `ms` from NOW. */
const waitFor = (ms: number): RecoveryStep => ({ kind: 'wait', until: NOW + ms, remainingMs: ms });
const GIVE_UP: RecoveryStep = { kind: 'give-up' };

describe('decideRecovery (docs/design.md §3)', () => {
  it.each<[string, number, number | null, RecoveryStep]>([
    ['0 attempts', 0, null, force(1)],
    ['0 attempts, recent time ignored', 0, NOW - SEC, force(1)],
    ['negative attempts read as 0', -2, NOW - SEC, force(1)],
    ['1 attempt at 10 s: wait exactly 20 s', 1, NOW - 10 * SEC, waitFor(20 * SEC)],
    ['1 attempt at 30 s: force 2', 1, NOW - 30 * SEC, force(2)],
    ['1 attempt at 45 s: force 2', 1, NOW - 45 * SEC, force(2)],
    ['1 attempt, time malformed (long ago): force 2', 1, null, force(2)],
    ['2 attempts at 59 s: wait 1 s', 2, NOW - 59 * SEC, waitFor(SEC)],
    ['3 attempts at 30 s: wait 90 s', 3, NOW - 30 * SEC, waitFor(90 * SEC)],
    ['3 attempts at 2 m: force 4', 3, NOW - 2 * MIN, force(4)],
    ['4 attempts at 3 m: wait 1 m', 4, NOW - 3 * MIN, waitFor(MIN)],
    ['4 attempts at 4 m: force 5', 4, NOW - 4 * MIN, force(5)],
    ['5 attempts at 1 s: wait 3m59s (final window)', 5, NOW - SEC, waitFor(239 * SEC)],
    ['5 attempts at 3m59s: wait 1 s', 5, NOW - 239 * SEC, waitFor(SEC)],
    ['5 attempts at 4 m: give up', 5, NOW - 4 * MIN, GIVE_UP],
    ['5 attempts, lastRecoveryAt null: give up', 5, null, GIVE_UP],
    ['8 attempts: give up', 8, NOW - 10 * MIN, GIVE_UP],
    ['8 attempts within 4 m: still the final window', 8, NOW - MIN, waitFor(3 * MIN)],
    [
      '1 attempt, last 30 s in the future: elapsed clamps at 0',
      1,
      NOW + 30 * SEC,
      waitFor(30 * SEC),
    ],
  ])('%s', (_label, attempts, last, step) => {
    expect(decideRecovery(attempts, last, NOW, CFG)).toEqual(step);
  });

  it('follows a configured attempt limit', () => {
    const cfg = { ...CFG, maxAttempts: 2 };
    expect(decideRecovery(1, NOW - MIN, NOW, cfg)).toEqual(force(2));
    expect(decideRecovery(2, NOW - MIN, NOW, cfg)).toEqual(GIVE_UP);
    expect(decideRecovery(2, NOW - 59 * SEC, NOW, cfg)).toEqual(waitFor(SEC));
  });
});
