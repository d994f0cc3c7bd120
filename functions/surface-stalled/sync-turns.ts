// One sync per AG at a time in this replica (docs/adr/0050-one-sync-per-ag-at-a-time.md).
// source-watcher writes an AG's status several times per reconcile, so several events about one AG
// arrive together and, redelivered under a storm, keep arriving together. Synced side by side they
// read the same PackageSource and all but one write meet a Conflict. In turns, a delivery that
// waited for a sync which has decided on the AG as read from the API server at its event's version
// or newer has nothing left to do: that sync ended after this delivery arrived, so it is what this
// delivery would have done. Nothing here is needed for correctness: without it every delivery
// syncs on its own.

import { resourceVersionAtLeast } from '../../shared/core/index.js';
import { abortReason, untilAborted } from '../../shared/runtime/delivery.js';

/** What a finished sync decided on. */
export interface SyncDecided<R> {
  readonly result: R;
  /**
   * The resourceVersion of the AG as read from the API server that the result was decided on;
   * undefined when the sync concluded without reading the AG (or did not conclude).
   */
  readonly agResourceVersion: string | undefined;
}

export interface SyncTurns {
  /**
   * Runs `sync` once no other sync about `key` runs in this replica. Returns 'covered' instead,
   * without running it, when a sync it waited for decided on the AG at `atLeast` or newer. The
   * wait ends when `signal` (the delivery's) aborts: run rejects with its reason, and `sync` never
   * runs (docs/adr/0057).
   */
  run<R>(
    key: string,
    atLeast: string | undefined,
    sync: () => Promise<SyncDecided<R>>,
    signal?: AbortSignal,
  ): Promise<SyncDecided<R> | 'covered'>;
  /** How many AGs have a sync running (for tests and logs). */
  running(): number;
}

/**
 * A delivery waits for at most this many syncs of its AG; then it syncs beside the running one (a
 * Conflict, if any, is handled as always). It bounds a delivery's wait when many versions of one AG
 * arrive at once: each sync is bounded by its calls' request timeouts, and the whole wait by the
 * delivery's deadline.
 */
export const MAX_SYNCS_WAITED = 3;

export function createSyncTurns(): SyncTurns {
  // The running sync of each AG, settled to what it decided on (undefined when it threw).
  const running = new Map<string, Promise<string | undefined>>();
  return {
    async run(key, atLeast, sync, signal) {
      for (let waited = 0; waited < MAX_SYNCS_WAITED; waited++) {
        const current = running.get(key);
        if (current === undefined) break;
        const decidedOn = await untilAborted(current, signal);
        if (atLeast !== undefined && resourceVersionAtLeast(decidedOn, atLeast)) return 'covered';
      }
      if (signal?.aborted === true) throw abortReason(signal);
      const mine = sync();
      // Leaves the map before any waiter resumes, so a waiter never waits twice for one sync.
      const settled: Promise<string | undefined> = mine
        .then(
          (d) => d.agResourceVersion,
          () => undefined,
        )
        .then((decidedOn) => {
          if (running.get(key) === settled) running.delete(key);
          return decidedOn;
        });
      if (!running.has(key)) running.set(key, settled);
      return mine;
    },
    running: () => running.size,
  };
}
