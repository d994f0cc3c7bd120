import { describe, expect, it } from 'vitest';
import { decideRecovery, type RecoveryStep } from '../../../shared/core/index.js';
import { CFG, MIN, SEC, STALL } from './fixtures.js';

const NOW = STALL + 30 * MIN;

describe('decideRecovery (DESIGN §3 table)', () => {
  it.each<[string, number, number | null, RecoveryStep]>([
    ['0 attempts', 0, null, { kind: 'force', attempt: 1 }],
    ['0 attempts, recent time ignored', 0, NOW - SEC, { kind: 'force', attempt: 1 }],
    ['negative attempts read as 0', -2, NOW - SEC, { kind: 'force', attempt: 1 }],
    [
      '1 attempt at 10 s: wait exactly 20 s',
      1,
      NOW - 10 * SEC,
      { kind: 'wait', until: NOW + 20 * SEC, remainingMs: 20 * SEC },
    ],
    ['1 attempt at 30 s: force 2', 1, NOW - 30 * SEC, { kind: 'force', attempt: 2 }],
    ['1 attempt at 45 s: force 2', 1, NOW - 45 * SEC, { kind: 'force', attempt: 2 }],
    ['1 attempt, time malformed (long ago): force 2', 1, null, { kind: 'force', attempt: 2 }],
    [
      '2 attempts at 59 s: wait 1 s',
      2,
      NOW - 59 * SEC,
      { kind: 'wait', until: NOW + SEC, remainingMs: SEC },
    ],
    [
      '3 attempts at 30 s: wait 90 s',
      3,
      NOW - 30 * SEC,
      { kind: 'wait', until: NOW + 90 * SEC, remainingMs: 90 * SEC },
    ],
    ['3 attempts at 2 m: force 4', 3, NOW - 2 * MIN, { kind: 'force', attempt: 4 }],
    [
      '4 attempts at 3 m: wait 1 m',
      4,
      NOW - 3 * MIN,
      { kind: 'wait', until: NOW + MIN, remainingMs: MIN },
    ],
    ['4 attempts at 4 m: force 5', 4, NOW - 4 * MIN, { kind: 'force', attempt: 5 }],
    [
      '5 attempts at 1 s: wait 3m59s (final window)',
      5,
      NOW - SEC,
      { kind: 'wait', until: NOW + 239 * SEC, remainingMs: 239 * SEC },
    ],
    [
      '5 attempts at 3m59s: wait 1 s',
      5,
      NOW - 239 * SEC,
      { kind: 'wait', until: NOW + SEC, remainingMs: SEC },
    ],
    ['5 attempts at 4 m: give up', 5, NOW - 4 * MIN, { kind: 'give-up' }],
    ['5 attempts, lastRecoveryAt null: give up', 5, null, { kind: 'give-up' }],
    ['8 attempts: give up', 8, NOW - 10 * MIN, { kind: 'give-up' }],
    [
      '8 attempts within 4 m: still the final window',
      8,
      NOW - MIN,
      { kind: 'wait', until: NOW + 3 * MIN, remainingMs: 3 * MIN },
    ],
    [
      '1 attempt, last 30 s in the future: elapsed clamps at 0',
      1,
      NOW + 30 * SEC,
      { kind: 'wait', until: NOW + 30 * SEC, remainingMs: 30 * SEC },
    ],
  ])('%s', (_label, attempts, last, step) => {
    expect(decideRecovery(attempts, last, NOW, CFG)).toEqual(step);
  });

  it('follows a configured attempt limit', () => {
    const cfg = { ...CFG, maxAttempts: 2 };
    expect(decideRecovery(1, NOW - MIN, NOW, cfg)).toEqual({ kind: 'force', attempt: 2 });
    expect(decideRecovery(2, NOW - MIN, NOW, cfg)).toEqual({ kind: 'give-up' });
    expect(decideRecovery(2, NOW - 59 * SEC, NOW, cfg)).toEqual({
      kind: 'wait',
      until: NOW + SEC,
      remainingMs: SEC,
    });
  });
});
