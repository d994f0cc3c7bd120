// The load every P3 row puts on a server (docs/benchmarks.md, P3): autocannon's CLI in its own
// process, 10 connections, a warm-up, then the measured seconds, in rounds alternating which
// server goes first.

import { cpuTicksNow, stealBetween, type CpuTicks } from './host-steal.js';
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
  if (xs.length === 0) return 'none';
  return `${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}`;
}

/** A round whose host CPU steal was above this share is set aside (see pairedRounds). */
export const QUIET_STEAL = 0.05;

export interface PairedRounds<T> {
  /** The kept rounds' measurements, in order. */
  readonly kept: T[];
  /** Every round's steal in percent (null: the host cannot tell), kept or not. */
  readonly stealPct: (number | null)[];
  /** Rounds set aside for their steal. */
  readonly setAside: number;
  /** Whether enough rounds were quiet for the rows to say anything (half of rounds()). */
  readonly enough: boolean;
}

/**
 * Runs `round` (one measurement of each server, order alternating with its index) until
 * rounds() of them ran on a quiet host, at most twice that many. The host's CPU steal is read
 * around each round: steal slows whichever server runs then (it swung the per-round ratio from
 * 0.31 to 1.98 in one run), and being one-sided it cannot average out. A host where steal is
 * unknown counts as quiet. Fewer than half of rounds() quiet: `enough` is false and the rows
 * built on it miss their target as "not measured" (markNoisy).
 */
export async function pairedRounds<T>(
  round: (index: number) => Promise<T>,
  log: (line: string) => void,
  steal: {
    now: () => CpuTicks | null;
    between: (a: CpuTicks | null, b: CpuTicks | null) => number | null;
  } = { now: cpuTicksNow, between: stealBetween },
): Promise<PairedRounds<T>> {
  const wanted = rounds();
  const kept: T[] = [];
  const stealPct: (number | null)[] = [];
  for (let i = 0; i < 2 * wanted && kept.length < wanted; i++) {
    const before = steal.now();
    const m = await round(i);
    const s = steal.between(before, steal.now());
    stealPct.push(s === null ? null : Math.round(s * 1000) / 10);
    if (s !== null && s > QUIET_STEAL) {
      log(`  round ${i + 1}: host CPU steal ${(s * 100).toFixed(1)} %, set aside`);
      continue;
    }
    kept.push(m);
  }
  return {
    kept,
    stealPct,
    setAside: stealPct.length - kept.length,
    enough: kept.length >= Math.ceil(wanted / 2),
  };
}

/** What every row built on paired rounds carries in its detail. */
export function roundsDetail(r: PairedRounds<unknown>): Record<string, unknown> {
  return {
    roundsKept: r.kept.length,
    roundsSetAside: r.setAside,
    stealPctByRound: r.stealPct,
    quietSteal: `<= ${QUIET_STEAL * 100} %`,
  };
}

/** A row whose rounds were too few to tell: it misses its target, saying why. */
export function markNoisy<R extends { metric: string; pass: boolean | null }>(
  row: R,
  r: PairedRounds<unknown>,
): R {
  if (r.enough) return row;
  return {
    ...row,
    metric: `${row.metric} [not measured: ${r.setAside} of ${r.stealPct.length} rounds had host CPU steal above ${QUIET_STEAL * 100} %]`,
    pass: row.pass === null ? null : false,
  };
}
