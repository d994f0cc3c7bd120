// The only source of time for the functions. Production uses the system clock; tests and the
// embedded demo share one controllable clock (test/harness/virtual-clock.ts).

export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that can also run a callback at a wall-clock moment (the emulation's timers). */
export interface TimerClock extends Clock {
  /** Run fn once the clock reaches `at` (epoch ms). Returns an id for cancel(). */
  setTimer(at: number, fn: () => void | Promise<void>): number;
  /** Cancel a timer. Returns false when it already fired or was cancelled. */
  cancel(id: number): boolean;
  /** Cancel every pending timer. */
  stop(): void;
}

/**
 * The system clock with timers, correct for any delay. Node's setTimeout takes at most
 * MAX_TIMEOUT_MS (about 24.8 days) and fires a longer delay after 1 ms, so a long wait is made of
 * steps of at most MAX_TIMEOUT_MS, and the callback runs only once the wall clock has reached `at`.
 */
export function systemTimerClock(): TimerClock {
  const timers = new Map<number, ReturnType<typeof setTimeout>>();
  let next = 1;
  const step = (id: number, at: number, fn: () => void | Promise<void>): void => {
    const remaining = at - Date.now();
    if (remaining <= 0) {
      timers.delete(id);
      void fn();
      return;
    }
    timers.set(
      id,
      setTimeout(() => step(id, at, fn), Math.min(remaining, MAX_TIMEOUT_MS)),
    );
  };
  return {
    now: () => Date.now(),
    setTimer(at, fn) {
      if (Number.isNaN(at)) throw new RangeError('setTimer: the moment is not a number');
      const id = next++;
      // Always asynchronous, even for a moment that has passed.
      timers.set(
        id,
        setTimeout(() => step(id, at, fn), Math.min(Math.max(0, at - Date.now()), MAX_TIMEOUT_MS)),
      );
      return id;
    },
    cancel(id) {
      clearTimeout(timers.get(id));
      return timers.delete(id);
    },
    stop() {
      for (const t of timers.values()) clearTimeout(t);
      timers.clear();
    },
  };
}
