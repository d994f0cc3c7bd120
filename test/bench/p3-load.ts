// The load every P3 row puts on a server (docs/benchmarks.md, P3): autocannon's CLI in its own
// process, 10 connections, a warm-up, then the measured seconds, in rounds alternating which
// server goes first.

import { sized } from './smoke.js';

export const CONNECTIONS = 10;

/**
 * Seconds of load before each measured round (the smoke: 1). Long enough for V8 to have compiled
 * both servers' hot code with its optimising tiers: with 1 s, that compilation (on V8's worker
 * threads, whose CPU counts in the server's) still ran inside the measured window, more of it for
 * detect than for the parser and more with the metrics SDK loaded.
 */
export const warmupSec = (): number => sized(3, 1);

/** Seconds of measured load per round (the smoke: 1). */
export const measureSec = (): number => sized(5, 1);

/** Rounds per server, alternating which goes first; the medians are compared (the smoke: 2). */
export const rounds = (): number => sized(6, 2);

/** min / max of xs, rounded to two decimals, as text. */
export function spread(xs: readonly number[]): string {
  return `${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}`;
}
