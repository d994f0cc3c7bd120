// The clock the emulation runs on. test/harness/virtual-clock.ts (VirtualClock) satisfies it; so
// does any object with this shape. Scheduled work (PingSource ticks, schedule pick-up lag) lives on
// this clock; HTTP delivery and retries run in real time (see broker.ts).

export interface EmuClock {
  /** Epoch milliseconds. */
  now(): number;
  /** Run fn once the clock reaches `at` (epoch ms). */
  setTimer(at: number, fn: () => void | Promise<void>): unknown;
  /** Optional: cancel a timer by the (numeric) id setTimer returned. */
  cancel?(id: number): unknown;
}

/** Cancels a timer when the clock supports it (stale timers are otherwise ignored by version). */
export function cancelTimer(clock: EmuClock, id: unknown): void {
  if (typeof id === 'number') clock.cancel?.(id);
}
