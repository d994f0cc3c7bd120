// The host's CPU steal: the share of this VM's CPU time that the hypervisor gave to someone else
// (the `steal` column of /proc/stat's `cpu` line). On a shared host it swings from 0 to 30 % within
// a minute and slows whichever server happens to run then, so P3's paired rounds measure it
// beside each round and set aside the rounds it swayed (p3-load.ts, docs/benchmarks.md P3).

import { readFileSync } from 'node:fs';

export interface CpuTicks {
  readonly steal: number;
  readonly total: number;
}

/**
 * The host's cumulative CPU ticks from the text of /proc/stat, or null when it has no `cpu`
 * line with a steal column (not Linux, or a kernel before 2.6.11).
 */
export function parseCpuTicks(procStat: string): CpuTicks | null {
  const line = procStat.split('\n').find((l) => l.startsWith('cpu '));
  if (line === undefined) return null;
  const fields = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal [guest guest_nice, already in user and nice]
  if (fields.length < 8 || fields.some((f) => !Number.isFinite(f))) return null;
  const counted = fields.slice(0, 8);
  return { steal: counted[7] ?? 0, total: counted.reduce((a, b) => a + b, 0) };
}

/** This host's ticks now, or null where /proc/stat cannot tell. */
export function cpuTicksNow(): CpuTicks | null {
  try {
    return parseCpuTicks(readFileSync('/proc/stat', 'utf8'));
  } catch {
    return null;
  }
}

/** The share of CPU time stolen between two readings (0..1), or null when either is missing. */
export function stealBetween(a: CpuTicks | null, b: CpuTicks | null): number | null {
  if (a === null || b === null) return null;
  const total = b.total - a.total;
  return total > 0 ? (b.steal - a.steal) / total : 0;
}
