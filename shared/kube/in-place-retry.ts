// One failed call of a delivery tried again in place, when that costs the API server less than
// the redelivery would (docs/adr/0070, docs/adr/0071). A delivery that fails is redelivered whole:
// every call it had made is made again. So a transient failure is tried again here, once, instead
// of answering 503:
//
// - a repeatable call after a 5xx, 429 or 408, a timeout or a cut connection, at once: a read; a
//   create that names its object (but an Event's); a write with a resourceVersion precondition.
//   Sending one of those twice leaves what sending it once leaves: the second create answers 409 AlreadyExists,
//   the second preconditioned write 409 Conflict once the first ran, and every caller already
//   reads those as "written" or "read again and decide";
// - any call after a 429 or 5xx that carries Retry-After, after that wait (what client-go's REST
//   client does, rest.checkWait: API Priority and Fairness answers 429 with `Retry-After: 1`
//   before it runs the request, so the request it did not run is sent at the moment it named).
//
// Any other write is never tried again here (its request may have run; the redelivery re-reads
// and re-decides). While the delivery has had no answer only a Retry-After is honoured: a first
// call that failed without one costs the redelivery no more than a retry, so an outage is met by
// the Broker's backoff alone, not by more requests; a server that names its moment is pacing its
// clients. A call that failed while a sibling it was sent beside is still in flight (force-drift
// reads the AG and its history at once) waits for that sibling: when it is answered, the server is
// not out, and the failed call is tried again as any later one. Nothing is tried again after the delivery's MAX_RETRIES, for a Retry-After above
// MAX_WAIT_MS, or once the delivery has ended (its deadline, its client gone). A wait runs on the
// function's clock and ends with the delivery. Outside a delivery (start-up, the prerequisites
// check) nothing is retried.

import { deliveryApiCalls, deliverySignal, type ApiCallLedger } from '../runtime/delivery.js';
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

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const nonEmpty = (v: unknown): boolean => typeof v === 'string' && v !== '';

/**
 * Whether sending `req` twice leaves what sending it once leaves, as the API server judges it
 * from the request itself: a read; a create whose body names its object (no generateName); a
 * PATCH whose body carries metadata.resourceVersion; a DELETE whose body carries
 * preconditions.resourceVersion. A review (TokenReview, SubjectAccessReview) names nothing and
 * is not one; a request marked `once` (an Event create) is not either.
 */
export function isRepeatable(req: Pick<HttpRequest, 'method' | 'body' | 'once'>): boolean {
  if (req.once === true) return false;
  const body = req.body;
  switch (req.method) {
    case 'GET':
      return true;
    case 'POST':
      return (
        isRecord(body) &&
        isRecord(body['metadata']) &&
        nonEmpty(body['metadata']['name']) &&
        body['metadata']['generateName'] === undefined
      );
    case 'PATCH':
      return (
        isRecord(body) &&
        isRecord(body['metadata']) &&
        nonEmpty(body['metadata']['resourceVersion'])
      );
    case 'DELETE':
      return (
        isRecord(body) &&
        isRecord(body['preconditions']) &&
        nonEmpty(body['preconditions']['resourceVersion'])
      );
    default:
      return false;
  }
}

/**
 * Whether `outcome` of `req` is tried again in place, and after how long (ms); undefined: not
 * here (the delivery answers as it would have). `firstAnswer`: the delivery has had no answer
 * yet, so only a Retry-After is honoured.
 */
export function retryWaitMs(
  req: Pick<HttpRequest, 'method' | 'body' | 'once'>,
  outcome: HttpOutcome,
  maxWaitMs = MAX_WAIT_MS,
  firstAnswer = false,
): number | undefined {
  if (outcome.kind === 'response') {
    if (!isTransientStatus(outcome.statusCode)) return undefined;
    const after = outcome.retryAfterSeconds;
    if (after !== undefined && outcome.statusCode !== 408) {
      const ms = after * 1000;
      return ms <= maxWaitMs ? ms : undefined;
    }
    return !firstAnswer && isRepeatable(req) ? 0 : undefined;
  }
  if (outcome.kind === 'timeout' || outcome.kind === 'transport') {
    return !firstAnswer && isRepeatable(req) ? 0 : undefined;
  }
  // aborted (the delivery ended), credentials: nothing to gain.
  return undefined;
}

export function retryingInPlace(send: Send, opts: InPlaceRetryOptions): Send {
  const maxRetries = opts.maxRetries ?? MAX_RETRIES;
  const maxWaitMs = opts.maxWaitMs ?? MAX_WAIT_MS;
  return async (req: HttpRequest): Promise<HttpOutcome> => {
    const ledger = deliveryApiCalls();
    if (ledger === undefined) return send(req);
    const outcome = await sendCounted(ledger, send, req);
    if (isAnswer(outcome) || ledger.retried >= maxRetries) return outcome;
    const signal = req.signal ?? deliverySignal();
    if (
      ledger.answered === 0 &&
      ledger.inFlight > 0 &&
      retryWaitMs(req, outcome, maxWaitMs) === 0
    ) {
      await siblingsSettled(ledger, signal);
      if (ledger.retried >= maxRetries) return outcome;
    }
    const waitMs = retryWaitMs(req, outcome, maxWaitMs, ledger.answered === 0);
    if (waitMs === undefined) return outcome;
    if (signal?.aborted === true) return { kind: 'aborted' };
    ledger.retried++;
    if (waitMs > 0 && !(await sleep(opts.clock, waitMs, signal))) return { kind: 'aborted' };
    return sendCounted(ledger, send, req);
  };
}

/** Sends `req` as one of the delivery's calls: counted in flight, and answered when it is one. */
async function sendCounted(
  ledger: ApiCallLedger,
  send: Send,
  req: HttpRequest,
): Promise<HttpOutcome> {
  ledger.inFlight++;
  try {
    const outcome = await send(req);
    if (isAnswer(outcome)) ledger.answered++;
    return outcome;
  } finally {
    ledger.inFlight--;
    for (const wake of ledger.onEnd.splice(0)) wake();
  }
}

/**
 * Resolves once the delivery has an answer, or none of its calls is in flight any more, or its
 * signal aborted.
 */
async function siblingsSettled(
  ledger: ApiCallLedger,
  signal: AbortSignal | undefined,
): Promise<void> {
  while (ledger.answered === 0 && ledger.inFlight > 0 && signal?.aborted !== true) {
    await new Promise<void>((resolve) => {
      const done = (): void => {
        signal?.removeEventListener('abort', done);
        resolve();
      };
      ledger.onEnd.push(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }
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
