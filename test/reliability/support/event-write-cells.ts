// The fault-matrix rows of a Kubernetes Event write (issue 15), which force-drift and
// surface-stalled share: the Event create fails in every way, the step (or verdict) is done before
// it is reported, so the end state is the fault-free twin's. A transient failure leaves the Event
// owed (docs/adr/0061): 503, and the redelivery (another process here) writes it; a 409 is the
// Event found already there.

import type { FaultCase } from './fault-cases.js';
import { redelivered, type Expectation } from './fault-matrix.js';
import type { CallRow } from './matrix-suite.js';

/**
 * The Event writes' own deadline in the cells that fault one (the product default is 2 s): above
 * a 'slow' call's 250 ms with room for a loaded machine, since a timed-out Event is owed (503).
 */
export const EVENT_DEADLINE_MS = 1000;
/** The Event deadline of the cells that fault another call. */
export const UNHURRIED_EVENT_MS = 8000;

/** A 409 is the Event already there; any other failure leaves it owed once `done` is done. */
export const eventOwed =
  (done: string) =>
  (f: FaultCase): Expectation =>
    f.label === '409'
      ? { status: 200, why: 'AlreadyExists: read, and its series bumped (or created again)' }
      : redelivered(`${done}; its Event is owed, and the redelivery writes it`)(f);

/** The row of the Event create in `namespace` once `done` is done (its deadline short). */
export const eventCreateRow = <C>(
  call: string,
  namespace: string,
  done: string,
  row: Pick<CallRow<C>, 'setup'> = {},
): CallRow<C> => ({
  call,
  write: true,
  ...row,
  target: () => ({
    match: { group: 'events.k8s.io', resource: 'events', verb: 'create', namespace },
  }),
  env: () => ({ EVENT_WRITE_TIMEOUT_MS: String(EVENT_DEADLINE_MS) }),
  expect: eventOwed(done),
});
