// The only source of time for the functions. Production uses the system clock; tests and the
// embedded demo share one controllable clock (test/harness/virtual-clock.ts).

export interface Clock {
  /** Epoch milliseconds (the wall clock: it may jump, e.g. when NTP steps it). */
  now(): number;
  /**
   * Milliseconds from an arbitrary origin on a clock that never jumps: measure durations (budgets,
   * elapsed time) with it, never with now() (docs/adr/0057-delivery-deadline-and-sweep-resume.md).
   */
  monotonicMs(): number;
  /**
   * A signal that aborts once `ms` have passed on the monotonic clock (reason: a DeadlineError);
   * clear() cancels it (the delivery ended first). `onExpire` runs when it aborts, with the same
   * reason: a caller that only needs the moment adds no listener to the signal (an event
   * listener's first registration on a signal costs more than the rest of a no-op delivery).
   */
  deadline(ms: number, onExpire?: (reason: DeadlineError) => void): Deadline;
}

export interface Deadline {
  readonly signal: AbortSignal;
  clear(): void;
}

/** The reason of a deadline's signal: the time given to a piece of work has passed. */
export class DeadlineError extends Error {
  constructor(readonly afterMs: number) {
    super(`deadline of ${afterMs} ms passed`);
    this.name = 'DeadlineError';
  }
}

export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** A Deadline armed on a clock's own timers (`arm` returns the function that disarms it). */
export function deadlineOn(
  ms: number,
  arm: (fire: () => void) => () => void,
  onExpire?: (reason: DeadlineError) => void,
): Deadline {
  const controller = new AbortController();
  const disarm = arm(() => {
    const reason = new DeadlineError(ms);
    controller.abort(reason);
    onExpire?.(reason);
  });
  return {
    signal: controller.signal,
    clear: () => disarm(),
  };
}

function systemDeadline(ms: number, onExpire?: (reason: DeadlineError) => void): Deadline {
  return deadlineOn(
    ms,
    (fire) => {
      // setTimeout runs on the monotonic clock; unref: a pending deadline never holds the process.
      const timer = setTimeout(fire, Math.min(Math.max(0, ms), MAX_TIMEOUT_MS));
      timer.unref();
      return () => clearTimeout(timer);
    },
    onExpire,
  );
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonicMs: () => performance.now(),
  deadline: systemDeadline,
};

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
    monotonicMs: () => performance.now(),
    deadline: systemDeadline,
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
