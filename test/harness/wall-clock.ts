// The real clock, with the VirtualClock's interface, for the few runs that measure wall-clock
// latency on the whole system (bench P1 on a real clock, issue 21): timers are real setTimeouts,
// advance() just waits, and nothing waits for a settle between timers. Everything that takes the
// harness's clock (the simulator, the Knative emulation, the functions) runs on it unchanged.

import {
  systemClock,
  systemTimerClock,
  type Deadline,
  type DeadlineError,
} from '../../shared/runtime/clock.js';
import { VirtualClock, type TimerCallback, type TimerId } from './virtual-clock.js';

const wait = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

export class WallClock extends VirtualClock {
  readonly #timers = systemTimerClock();
  readonly #pending = new Set<TimerId>();

  override now(): number {
    return Date.now();
  }

  override monotonicMs(): number {
    return performance.now();
  }

  override deadline(ms: number, onExpire?: (reason: DeadlineError) => void): Deadline {
    return systemClock.deadline(ms, onExpire);
  }

  override jumpWall(): void {
    throw new Error('WallClock: the real wall clock cannot be stepped');
  }

  override setTimer(at: number, fn: TimerCallback): TimerId {
    if (!Number.isFinite(at)) throw new RangeError(`WallClock.setTimer: invalid time ${at}`);
    const id: TimerId = this.#timers.setTimer(at, async () => {
      this.#pending.delete(id);
      await fn();
    });
    this.#pending.add(id);
    return id;
  }

  override cancel(id: TimerId): boolean {
    this.#pending.delete(id);
    return this.#timers.cancel(id);
  }

  override get pendingTimers(): number {
    return this.#pending.size;
  }

  override peek(): number | undefined {
    return undefined;
  }

  /** Waits ms of real time (timers fire on their own meanwhile). */
  override advance(ms: number): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0) {
      return Promise.reject(new RangeError(`WallClock.advance: invalid duration ${ms}`));
    }
    return wait(ms);
  }

  /** Waits until the real clock reaches t. */
  override advanceTo(t: number): Promise<void> {
    if (!Number.isFinite(t)) return Promise.reject(new RangeError(`WallClock: invalid time ${t}`));
    return wait(t - Date.now());
  }

  /** Cancels every pending timer. */
  stop(): void {
    this.#timers.stop();
    this.#pending.clear();
  }
}
