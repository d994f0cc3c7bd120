// One failed call of a delivery tried again in place, when that costs the API server less than
// the redelivery would (docs/adr/0070). A delivery that fails is redelivered whole: every call it
// had made is made again. So once a delivery has had an answer, a transient failure of a later call
// is tried again here, once, instead of answering 503:
//
// - a read (GET) after a 5xx, 429 or 408, a timeout or a cut connection: reading again changes
//   nothing;
// - any call after a 429 or 5xx that carries Retry-After, after that wait (what client-go's REST
//   client does, rest.checkWait: API Priority and Fairness answers 429 with `Retry-After: 1`
//   before it runs the request, so the request it did not run is sent at the moment it named).
//
// A write without Retry-After is never tried again here (its request may have run; the
// redelivery re-reads and re-decides). Nothing is tried again in place while the delivery has had
// no answer (its first call failing costs the redelivery no more than a retry: an outage is met
// by the Broker's backoff alone, not by more requests), after the delivery's MAX_RETRIES, for a
// Retry-After above MAX_WAIT_MS, or once the delivery has ended (its deadline, its client gone).
// A wait runs on the function's clock and ends with the delivery. Outside a delivery (start-up,
// the prerequisites check) nothing is retried.

import { deliveryApiCalls, deliverySignal } from '../runtime/delivery.js';
import type { HttpOutcome, HttpRequest, Send } from './transport.js';

/** In-place retries per delivery (each call is retried at most once). */
export const MAX_RETRIES = 2;
/** The longest Retry-After a call sits out inside its delivery. */
export const MAX_WAIT_MS = 5_000;

/**
 * What the waits need of the function's clock (shared/runtime/clock.ts's Clock has it: this layer
 * does not import the runtime's clock).
 */
export interface WaitClock {
  deadline(ms: number, onExpire?: () => void): { clear(): void };
}

export interface InPlaceRetryOptions {
  /** The function's clock (deps): a Retry-After is sat out on it. */
  readonly clock: WaitClock;
  readonly maxRetries?: number;
  readonly maxWaitMs?: number;
}

/** An answer the delivery keeps: anything but a transient failure. */
export function isAnswer(outcome: HttpOutcome): boolean {
  return outcome.kind === 'response' && !isTransientStatus(outcome.statusCode);
}

function isTransientStatus(statusCode: number): boolean {
  return statusCode >= 500 || statusCode === 429 || statusCode === 408;
}

/**
 * Whether `outcome` of `req` is tried again in place, and after how long (ms); undefined: not
 * here (the delivery answers as it would have).
 */
export function retryWaitMs(
  req: Pick<HttpRequest, 'method'>,
  outcome: HttpOutcome,
  maxWaitMs = MAX_WAIT_MS,
): number | undefined {
  if (outcome.kind === 'response') {
    if (!isTransientStatus(outcome.statusCode)) return undefined;
    const after = outcome.retryAfterSeconds;
    if (after !== undefined && outcome.statusCode !== 408) {
      const ms = after * 1000;
      return ms <= maxWaitMs ? ms : undefined;
    }
    return req.method === 'GET' ? 0 : undefined;
  }
  if (outcome.kind === 'timeout' || outcome.kind === 'transport') {
    return req.method === 'GET' ? 0 : undefined;
  }
  // aborted (the delivery ended), credentials: nothing to gain.
  return undefined;
}

export function retryingInPlace(send: Send, opts: InPlaceRetryOptions): Send {
  const maxRetries = opts.maxRetries ?? MAX_RETRIES;
  const maxWaitMs = opts.maxWaitMs ?? MAX_WAIT_MS;
  return async (req: HttpRequest): Promise<HttpOutcome> => {
    const outcome = await send(req);
    const ledger = deliveryApiCalls();
    if (ledger === undefined) return outcome;
    if (isAnswer(outcome)) {
      ledger.answered++;
      return outcome;
    }
    if (ledger.answered === 0 || ledger.retried >= maxRetries) return outcome;
    const waitMs = retryWaitMs(req, outcome, maxWaitMs);
    if (waitMs === undefined) return outcome;
    const signal = req.signal ?? deliverySignal();
    if (signal?.aborted === true) return { kind: 'aborted' };
    ledger.retried++;
    if (waitMs > 0 && !(await sleep(opts.clock, waitMs, signal))) return { kind: 'aborted' };
    const again = await send(req);
    if (isAnswer(again)) ledger.answered++;
    return again;
  };
}

/** Waits `ms` on `clock`; false when `signal` aborted first. */
function sleep(clock: WaitClock, ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const onAbort = (): void => {
      timer.clear();
      resolve(false);
    };
    const timer = clock.deadline(ms, () => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
