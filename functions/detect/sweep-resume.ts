// Where an incomplete sweep stopped, kept by the process for the redelivery of the same ping
// (docs/adr/0057-delivery-deadline-and-sweep-resume.md). The Broker redelivers a ping with the same
// id; when the redelivery lands on this replica within SWEEP_RESUME_TTL_MS, the sweep goes on from
// the first page it had not fully acted on instead of listing every AG again. Anything else (another
// replica, a restart, scale to zero, an expired continue token) sweeps from the first page, as
// before: the kept position saves work, correctness never depends on it.

/** The first page of a sweep not yet fully acted on, and what the pages before it gave. */
export interface SweepPosition {
  /** The continue token that lists that page. */
  readonly continueToken: string;
  /** The earliest due time over the pages before it (null: none due). */
  readonly earliest: number | null;
  /** AGs evaluated on the pages before it (for the log). */
  readonly listed: number;
  /** The page's namespace, an index into RECOVERY_NAMESPACES (absent: all namespaces). */
  readonly scope?: number;
}

export interface SweepResumes {
  /** The position kept for `key` (and forgets it), if it is younger than SWEEP_RESUME_TTL_MS. */
  take(key: string, nowMonotonicMs: number): SweepPosition | undefined;
  /** Keeps `position` for `key`; the oldest goes when SWEEP_RESUME_MAX are kept. */
  keep(key: string, position: SweepPosition, nowMonotonicMs: number): void;
  /** How many positions are kept (for tests). */
  size(): number;
}

/**
 * A kept position is used for this long. A continue token outlives etcd's compaction interval
 * (kube-apiserver's default: 5 minutes) only by luck; the ping's Trigger redelivers within seconds.
 */
export const SWEEP_RESUME_TTL_MS = 5 * 60_000;
/** Positions kept at the most (one per ping being redelivered: there are few). */
export const SWEEP_RESUME_MAX = 16;

export function createSweepResumes(): SweepResumes {
  const kept = new Map<string, { position: SweepPosition; at: number }>();
  return {
    take(key, now) {
      const entry = kept.get(key);
      if (entry === undefined) return undefined;
      kept.delete(key);
      const age = now - entry.at;
      return age >= 0 && age < SWEEP_RESUME_TTL_MS ? entry.position : undefined;
    },
    keep(key, position, now) {
      kept.delete(key);
      kept.set(key, { position, at: now });
      for (const [k, e] of kept) {
        if (kept.size <= SWEEP_RESUME_MAX && now - e.at < SWEEP_RESUME_TTL_MS) break;
        kept.delete(k);
      }
    },
    size: () => kept.size,
  };
}
