// The deadlines of a function's deliveries (docs/adr/0057) on one timer of the clock, not one
// timer (and one AbortController) per delivery: a no-op delivery costs about as much as arming,
// clearing and collecting those (bench P3, docs/adr/0069). Every delivery gets the same length,
// so the order they start in is the order they expire in: a Set (insertion-ordered) holds the
// pending ones, the timer is armed for the first, and when it fires it expires every delivery
// that is due and re-arms for the next. A delivery that ends is deleted from the Set; the timer,
// if it was armed for it, fires once for nothing and re-arms, unless no delivery is left: then it
// is cleared.

import { DeadlineError, type Clock, type Deadline } from './clock.js';

export interface DeliveryDeadlines {
  /** Calls `expire` once `ms` have passed on the clock's monotonic time; the result cancels it. */
  start(expire: (reason: DeadlineError) => void): () => void;
}

interface Pending {
  readonly due: number;
  readonly expire: (reason: DeadlineError) => void;
}

export function deliveryDeadlines(clock: Clock, ms: number): DeliveryDeadlines {
  const pending = new Set<Pending>();
  let timer: Deadline | undefined;
  const arm = (): void => {
    const first = pending.values().next();
    if (first.done === true) return;
    timer = clock.deadline(Math.max(0, first.value.due - clock.monotonicMs()), fire);
  };
  const fire = (): void => {
    timer = undefined;
    const now = clock.monotonicMs();
    for (const p of pending) {
      if (p.due > now) break;
      pending.delete(p);
      p.expire(new DeadlineError(ms));
    }
    arm();
  };
  return {
    start(expire) {
      const p: Pending = { due: clock.monotonicMs() + ms, expire };
      pending.add(p);
      if (timer === undefined) arm();
      return () => {
        pending.delete(p);
        // Idle: no timer left behind (a stopped function leaves nothing on its clock).
        if (pending.size === 0 && timer !== undefined) {
          timer.clear();
          timer = undefined;
        }
      };
    },
  };
}
