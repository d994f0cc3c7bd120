// The action events this process emitted in the last few seconds (docs/adr/0047). Under a storm
// detect's own deliveries fail and are redelivered after their emit (the follow-up's write failed,
// a sweep's alarm write failed), and each redelivery emitted the same action again: a copy that
// reaches force-drift while the first copy's delivery chain is still in its first retries (1, 2
// and 4 s after its first try) adds requests and nothing else. After REPEAT_WINDOW_MS a copy is
// emitted again: the first copy's chain now waits 8 s and more between tries, and a fresh copy is
// an early try. Memory only, an optimisation: another replica, or a restarted one, emits as before.

import { setNewest } from '../../shared/recovery/newest-first.js';

/** Knative's first three retries of a copy (1 + 2 + 4 s) come within this window of its first try. */
export const REPEAT_WINDOW_MS = 8_000;
/** Entries kept at most; older ones are dropped first. */
const KEPT = 4_096;

export interface RecentActions {
  /** Whether an action with this key was emitted less than REPEAT_WINDOW_MS before `now`. */
  repeats(key: string, now: number): boolean;
  /** Records an action the Broker accepted. */
  emitted(key: string, now: number): void;
}

export function createRecentActions(windowMs: number = REPEAT_WINDOW_MS): RecentActions {
  const at = new Map<string, number>();
  return {
    repeats(key, now) {
      const last = at.get(key);
      return last !== undefined && now >= last && now - last < windowMs;
    },
    emitted(key, now) {
      setNewest(at, key, now, KEPT);
    },
  };
}
