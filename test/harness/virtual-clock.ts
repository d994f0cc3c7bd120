// A controllable clock for tests and the embedded demo. Time moves only when advance()/advanceTo()
// is called; due timers fire one at a time, in time order (same time: in the order they were set),
// each async callback is awaited before the next, and a settle hook runs between steps so that
// work triggered by a timer (HTTP deliveries, reconciles) can quiesce before time moves on.

import {
  deadlineOn,
  type Clock,
  type Deadline,
  type DeadlineError,
} from '../../shared/runtime/clock.js';

/** 2026-01-01T00:00:00Z. */
export const DEFAULT_START_MS = Date.parse('2026-01-01T00:00:00Z');

export type TimerCallback = () => void | Promise<void>;
/**
 * Runs between steps. `afterTimer`: the step was a timer's callback (no caller code ran since the
 * last settle), not the start of an advance.
 */
export type SettleHook = (step?: { afterTimer: boolean }) => Promise<void>;
export type TimerId = number;

export interface VirtualClockOptions {
  /** Start time: epoch milliseconds or an ISO 8601 string. Default 2026-01-01T00:00:00Z. */
  start?: number | string;
  /** Runs before the first step and after every fired timer of advance()/advanceTo(). */
  settle?: SettleHook;
}

export interface AdvanceOptions {
  /** Overrides the clock's settle hook for this call. */
  settle?: SettleHook;
}

export interface SleepOptions {
  /** Aborting cancels the timer and rejects the sleep with the signal's reason. */
  signal?: AbortSignal;
}

interface Timer {
  id: TimerId;
  at: number;
  fn: TimerCallback;
}

/** Without a settle hook, let pending microtasks and I/O callbacks run once between steps. */
const yieldOnce: SettleHook = () => new Promise((resolve) => setImmediate(resolve));

function toStartMs(start: number | string | undefined): number {
  if (start === undefined) return DEFAULT_START_MS;
  const ms = typeof start === 'number' ? start : Date.parse(start);
  if (!Number.isFinite(ms)) {
    throw new RangeError(`VirtualClock: invalid start time ${JSON.stringify(start)}`);
  }
  return ms;
}

export class VirtualClock implements Clock {
  /** Virtual time on the monotonic timeline; timers and advance() run on it. */
  #now: number;
  /** What jumpWall() moved the wall reading by: now() is #now + #wallOffset. */
  #wallOffset = 0;
  #nextId = 1;
  // Insertion-ordered: among timers with the same time, the first set fires first.
  readonly #timers = new Map<TimerId, Timer>();
  #settle: SettleHook | undefined;
  #advancing = false;

  constructor(options: VirtualClockOptions = {}) {
    this.#now = toStartMs(options.start);
    this.#settle = options.settle;
  }

  /** Epoch milliseconds of virtual time (the wall reading: jumpWall() moves it). */
  now(): number {
    return this.#now + this.#wallOffset;
  }

  /** Virtual time on the monotonic timeline: advance() moves it, jumpWall() does not. */
  monotonicMs(): number {
    return this.#now;
  }

  /** A signal that aborts once `ms` of virtual time have passed (a timer of this clock). */
  deadline(ms: number, onExpire?: (reason: DeadlineError) => void): Deadline {
    return deadlineOn(
      ms,
      (fire) => {
        const id = this.setTimer(this.now() + ms, fire);
        return () => this.cancel(id);
      },
      onExpire,
    );
  }

  /**
   * Steps the wall reading by `ms` (either way), as NTP or an operator setting the date does,
   * without moving the monotonic timeline: no timer fires, and the timers set so far stay due after
   * the same amount of advance() (like Node's timers, which run on the monotonic clock). Moments
   * given to setTimer()/advanceTo() afterwards are read on the stepped wall.
   */
  jumpWall(ms: number): void {
    if (!Number.isFinite(ms)) throw new RangeError(`VirtualClock.jumpWall: invalid step ${ms}`);
    this.#wallOffset += ms;
  }

  /** Replace (or remove, with undefined) the default settle hook. */
  setSettle(settle: SettleHook | undefined): void {
    this.#settle = settle;
  }

  /** Number of timers not yet fired or cancelled. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Whether advance()/advanceTo() is running. */
  get advancing(): boolean {
    return this.#advancing;
  }

  /**
   * Call fn when virtual time reaches `at` (epoch ms). A time in the past fires at the next step
   * of the next advance, without moving time backwards.
   */
  setTimer(at: number, fn: TimerCallback): TimerId {
    if (!Number.isFinite(at)) throw new RangeError(`VirtualClock.setTimer: invalid time ${at}`);
    if (typeof fn !== 'function')
      throw new TypeError('VirtualClock.setTimer: fn must be a function');
    const id = this.#nextId++;
    this.#timers.set(id, { id, at: at - this.#wallOffset, fn });
    return id;
  }

  /** Cancel a timer. Returns false when it already fired or was cancelled. */
  cancel(id: TimerId): boolean {
    return this.#timers.delete(id);
  }

  /** Time of the next timer, or undefined when none is pending. */
  peek(): number | undefined {
    const at = this.#earliest(Number.POSITIVE_INFINITY)?.at;
    return at === undefined ? undefined : at + this.#wallOffset;
  }

  /** Resolves when this clock reaches now + ms (a WallClock too). ms = 0 resolves at once. */
  sleep(ms: number, options: SleepOptions = {}): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0) {
      return Promise.reject(
        new RangeError(`${this.constructor.name}.sleep: invalid duration ${ms}`),
      );
    }
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    if (ms === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.cancel(id);
        reject(signal?.reason as Error);
      };
      const id = this.setTimer(this.now() + ms, () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Move virtual time forward by ms, firing due timers in order. */
  advance(ms: number, options: AdvanceOptions = {}): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0) {
      return Promise.reject(new RangeError(`VirtualClock.advance: invalid duration ${ms}`));
    }
    return this.advanceTo(this.now() + ms, options);
  }

  /**
   * Move virtual time forward to t (epoch ms), firing every timer due at or before t, one at a
   * time. If a callback or the settle hook throws, the call rejects with that error and time stays
   * at the failing step; later timers stay pending.
   */
  async advanceTo(t: number, options: AdvanceOptions = {}): Promise<void> {
    if (!Number.isFinite(t)) throw new RangeError(`VirtualClock.advanceTo: invalid time ${t}`);
    if (t < this.now()) {
      throw new RangeError(
        `VirtualClock.advanceTo: ${new Date(t).toISOString()} is before now ${new Date(this.now()).toISOString()}`,
      );
    }
    const target = t - this.#wallOffset;
    if (this.#advancing) throw new Error('VirtualClock: advance is already in progress');
    const settle = options.settle ?? this.#settle ?? yieldOnce;
    this.#advancing = true;
    try {
      await settle();
      for (;;) {
        const timer = this.#earliest(target);
        if (timer === undefined) break;
        this.#timers.delete(timer.id);
        this.#now = Math.max(this.#now, timer.at);
        await timer.fn();
        await settle({ afterTimer: true });
      }
      this.#now = target;
    } finally {
      this.#advancing = false;
    }
  }

  #earliest(limit: number): Timer | undefined {
    let best: Timer | undefined;
    for (const timer of this.#timers.values()) {
      if (timer.at <= limit && (best === undefined || timer.at < best.at)) best = timer;
    }
    return best;
  }
}
