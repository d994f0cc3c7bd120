// The one read-decide-write loop (shared/kube/redecide.ts): how many rounds run, what ends it.
// The loops it drives are proven against the real API server's Conflicts in the functions'
// integration tests; this holds the loop's own bounds.

import { describe, expect, it } from 'vitest';
import { ConflictError, TransientError } from '../../../shared/kube/errors.js';
import {
  AGAIN,
  againOnConflict,
  redecide,
  REDECIDE_ROUNDS,
  type Round,
} from '../../../shared/kube/redecide.js';

describe('redecide', () => {
  const table: [string, Round<string>[], number | undefined, string, number][] = [
    ['the first answer ends it', ['done'], undefined, 'done', 1],
    ['AGAIN reads again', [AGAIN, AGAIN, 'done'], undefined, 'done', 3],
    ['every round AGAIN: exhausted after the default bound', [AGAIN], undefined, 'gave up', 4],
    ['a shorter bound', [AGAIN], 3, 'gave up', 3],
    ['an answer in the last round counts', [AGAIN, AGAIN, 'done'], 3, 'done', 3],
  ];
  it.each(table)('%s', async (_name, answers, rounds, want, wantRounds) => {
    const seen: number[] = [];
    const got = await redecide<string>(
      async (n) => {
        seen.push(n);
        return answers[Math.min(n, answers.length - 1)] ?? AGAIN;
      },
      { exhausted: () => 'gave up', ...(rounds !== undefined ? { rounds } : {}) },
    );
    expect(got).toBe(want);
    expect(seen).toEqual([...Array(wantRounds).keys()]);
  });

  it('the default bound is 4', () => {
    expect(REDECIDE_ROUNDS).toBe(4);
  });

  it('a round that throws ends the loop with that error; exhausted may throw', async () => {
    const boom = new TransientError('HTTP 503');
    await expect(
      redecide(
        async () => {
          throw boom;
        },
        { exhausted: () => 'never' },
      ),
    ).rejects.toBe(boom);
    await expect(
      redecide(async () => AGAIN, {
        exhausted: () => {
          throw new Error('still conflicting');
        },
      }),
    ).rejects.toThrow('still conflicting');
  });

  it('againOnConflict: a Conflict reads again, anything else is thrown on', () => {
    expect(againOnConflict(new ConflictError('rv changed'))).toBe(AGAIN);
    const other = new TransientError('HTTP 429');
    expect(() => againOnConflict(other)).toThrow(other);
  });
});
