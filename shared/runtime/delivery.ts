// The delivery a piece of work belongs to (docs/adr/0057-delivery-deadline-and-sweep-resume.md).
// function-app.ts runs each handler inside the scope of its delivery: a signal that aborts when the
// delivery's deadline passes or its client (the Broker's dispatcher) closes the connection. Every
// outgoing call reads it here: the API transport (shared/kube/transport.ts) and the Broker emitter
// combine it with their own per-request timeout and start nothing once it has aborted, so no
// request leaves after a delivery ended, whichever object built at start-up (the previous-versions
// cache, the alarm, the ExternalArtifact client) makes it.

import { AsyncLocalStorage } from 'node:async_hooks';

export interface Delivery {
  /** Aborts when the delivery's deadline passes or its client goes away. */
  readonly signal: AbortSignal;
  /**
   * The delivery's API calls as the in-place retries count them (shared/kube/in-place-retry.ts):
   * absent, no call of the delivery is retried in place.
   */
  readonly apiCalls?: ApiCallLedger;
}

/** A delivery's API calls that were answered (no transient failure), and its in-place retries. */
export interface ApiCallLedger {
  answered: number;
  retried: number;
  /** Calls sent and not yet ended. */
  inFlight: number;
  /** Called, and emptied, when one of the delivery's calls ends. */
  readonly onEnd: (() => void)[];
}

/**
 * A delivery's signal, made when something first reads it: the no-op path never does, so it
 * costs no AbortController (bench P3, docs/adr/0069). abort() before the first read makes the
 * signal it then gives aborted already, with the same reason.
 */
export class DeliveryControl implements Delivery {
  #controller: AbortController | undefined;
  #reason: Error | undefined;
  #apiCalls: ApiCallLedger | undefined;

  /** Made at the first API call (the no-op path makes none). */
  get apiCalls(): ApiCallLedger {
    return (this.#apiCalls ??= { answered: 0, retried: 0, inFlight: 0, onEnd: [] });
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#reason !== undefined) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Why it was aborted (its deadline, its client), or undefined while it runs. */
  get reason(): Error | undefined {
    return this.#reason;
  }

  /** Aborts the signal (read or not yet): the first reason wins. */
  abort(reason: Error): void {
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}

const scope = new AsyncLocalStorage<Delivery>();

/** Runs `work` as part of `delivery`: every call it makes, at any depth, sees its signal. */
export function inDelivery<T>(delivery: Delivery, work: () => T): T {
  return scope.run(delivery, work);
}

/** The signal of the delivery the caller is part of; undefined outside any (start-up, tests). */
export function deliverySignal(): AbortSignal | undefined {
  return scope.getStore()?.signal;
}

/** The API call ledger of the delivery the caller is part of; undefined outside any. */
export function deliveryApiCalls(): ApiCallLedger | undefined {
  return scope.getStore()?.apiCalls;
}

/** `timeout` combined with the current delivery's signal, when there is one. */
export function withDeliverySignal(timeout: AbortSignal): AbortSignal {
  const delivery = deliverySignal();
  return delivery === undefined ? timeout : AbortSignal.any([timeout, delivery]);
}

/** The reason a delivery's signal carries when its client closed the connection. */
export class ClientClosedError extends Error {
  constructor() {
    super('the client closed the connection');
    this.name = 'ClientClosedError';
  }
}

/** Rejects with the signal's reason as soon as it aborts; otherwise settles as `work` does. */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/** The signal's reason as an Error (an AbortSignal's reason may be anything). */
export function abortReason(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  return r instanceof Error ? r : new DeliveryAbortedError();
}

/** Work refused or cut short because its delivery has ended. */
export class DeliveryAbortedError extends Error {
  constructor(message = 'the delivery has ended') {
    super(message);
    this.name = 'DeliveryAbortedError';
  }
}
