// The waits the functions' API clients sit out on the system's virtual clock (a Retry-After,
// shared/kube/in-place-retry.ts), counted while they last: a delivery that sits one out stays in
// flight until the clock moves, so the system's settle ends once only such waits (and calls the
// proxy holds on the clock) are left, as it does for held calls (test/harness/system.ts).

import type { WaitClock } from '../../../shared/kube/in-place-retry.js';

export interface ApiWaits extends WaitClock {
  /** Waits armed and neither expired nor cleared. */
  readonly pending: number;
}

export function countedApiWaits(clock: WaitClock): ApiWaits {
  let pending = 0;
  return {
    get pending() {
      return pending;
    },
    deadline(ms, onExpire) {
      pending++;
      let open = true;
      const close = (): void => {
        if (open) pending--;
        open = false;
      };
      const d = clock.deadline(ms, () => {
        close();
        onExpire?.();
      });
      return {
        clear: () => {
          close();
          d.clear();
        },
      };
    },
  };
}
