// Every read-decide-write loop of the functions: a write carries the resourceVersion it was
// decided on, and when that precondition fails (Conflict) the round reads again and decides again,
// a bounded number of times. One helper, so that every loop has the same shape, bound and end.

import { isKubeError } from './errors.js';

/** Read and decide again at most this many times (one round: a read, a decision, a write). */
export const REDECIDE_ROUNDS = 4;

/** A round's answer when its precondition failed: read and decide again. */
export const AGAIN: unique symbol = Symbol('read and decide again');
export type Round<T> = T | typeof AGAIN;

export interface RedecideOptions<T> {
  /** What the loop answers when every round answered AGAIN (it may throw). */
  exhausted: () => T | Promise<T>;
  /** REDECIDE_ROUNDS unless the loop has a reason for another bound. */
  rounds?: number;
}

/** Runs `round(0)`, `round(1)`, … until one answers something other than AGAIN. */
export async function redecide<T>(
  round: (n: number) => Promise<Round<T>>,
  opts: RedecideOptions<T>,
): Promise<T> {
  const rounds = opts.rounds ?? REDECIDE_ROUNDS;
  for (let n = 0; n < rounds; n++) {
    const answer = await round(n);
    if (answer !== AGAIN) return answer;
  }
  return opts.exhausted();
}

/** For a round's catch: a Conflict is AGAIN, anything else is thrown on. */
export function againOnConflict(e: unknown): typeof AGAIN {
  if (isKubeError(e, 'Conflict')) return AGAIN;
  throw e;
}
