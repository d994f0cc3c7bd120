// The only source of time for the functions. Production uses the system clock; tests and the
// embedded demo share one controllable clock (test/harness/virtual-clock.ts).

export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
