// How the system's watches catch up at a settle, so that the harness's own cost does not grow
// with the world. A fresh list per watch (listCatchUp) proves that every change made so far was
// delivered, whoever made it; the system does that at the start of every advance and every
// settle a scenario asks for (the scenario may have written to the API server directly). Between
// two timers of one advance only the functions, the simulator and the Knative adapters ran, and
// all of them write through the recording proxy: there the watches wait only for the versions
// the proxy saw stored since their last check (ListWatch.waitSeen), with no request.

import type { KubeProxy, ProxyCall } from '../../support/kube-proxy.js';
import type { CatchUp, ListWatch, StoredVersion } from '../knative/list-watch.js';

export interface CatchUps {
  /** A fresh list per watch; remembers where the proxy's record stood. */
  readonly full: CatchUp;
  /** The versions the proxy saw stored since the watch's last check. */
  readonly incremental: CatchUp;
}

export function proxyCatchUps(proxy: KubeProxy): CatchUps {
  /** Per watch: the first call of the proxy's record not yet known to be delivered. */
  const cursors = new WeakMap<ListWatch, number>();
  /**
   * The watch's own list or watch connect is held by the storm on the clock (docs/adr/0060): it
   * cannot catch up before the clock moves. Its cursor stays, so the next catch-up waits again.
   */
  const heldFor = (watch: ListWatch) => (): boolean => {
    const { group, plural, namespace } = watch.resource;
    return proxy
      .heldCalls()
      .some(
        (c) =>
          (c.verb === 'list' || c.verb === 'watch') &&
          c.group === group &&
          c.resource === plural &&
          (namespace === undefined || c.namespace === namespace),
      );
  };

  /** The first pending write from `from` on (its outcome is not known yet), or the end. */
  const firstPending = (calls: readonly ProxyCall[], from: number): number => {
    for (let i = from; i < calls.length; i++) {
      if (isPendingWrite(calls[i])) return i;
    }
    return calls.length;
  };

  return {
    async full(watch, timeoutMs) {
      const calls = proxy.calls;
      const cursor = firstPending(calls, cursors.get(watch) ?? 0);
      const caughtUp = await watch.waitCaughtUp(timeoutMs, heldFor(watch));
      if (caughtUp) cursors.set(watch, cursor);
      return caughtUp;
    },
    async incremental(watch, timeoutMs) {
      const calls = proxy.calls;
      const from = cursors.get(watch) ?? 0;
      const { group, plural } = watch.resource;
      const versions: StoredVersion[] = [];
      for (let i = from; i < calls.length; i++) {
        const c = calls[i];
        if (c?.group !== group || c.resource !== plural) continue;
        if (c.written) versions.push(c.written);
      }
      const cursor = firstPending(calls, from);
      const caughtUp = await watch.waitSeen(versions, timeoutMs, heldFor(watch));
      if (caughtUp) cursors.set(watch, cursor);
      return caughtUp;
    },
  };
}

const WRITES = new Set(['create', 'update', 'patch', 'delete']);

function isPendingWrite(c: ProxyCall | undefined): boolean {
  // A write refused before it reached the API server has its status and never an outcome.
  return c !== undefined && WRITES.has(c.verb) && c.written === undefined && c.status === undefined;
}
