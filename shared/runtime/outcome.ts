// What a handler tells the HTTP layer. The Broker redelivers 5xx, 404, 408, 409 and 429 and
// dead-letters other 4xx, so: handled / gone / irrelevant -> 2xx, malformed -> 400,
// transient trouble -> 503. A Kubernetes status code never passes through.

import { isKubeError } from '../kube/errors.js';

export interface Outcome {
  readonly status: 200 | 202 | 400 | 500 | 503;
  /** A short constant word for logs and the response body. */
  readonly result: string;
}

export const handled = (result = 'handled'): Outcome => ({ status: 200, result });
export const ignored = (result = 'ignored'): Outcome => ({ status: 200, result });
export const malformed = (result = 'malformed'): Outcome => ({ status: 400, result });
export const retryLater = (result = 'retry-later'): Outcome => ({ status: 503, result });

/** An error raised while posting to the Broker. Always worth a redelivery. */
export class EmitError extends Error {
  constructor(
    message: string,
    readonly statusCode?: number,
  ) {
    super(message);
    this.name = 'EmitError';
  }
}

/** Maps an error escaping a handler to an outcome. */
export function outcomeForError(e: unknown): Outcome {
  if (e instanceof EmitError) return retryLater('emit-failed');
  if (isKubeError(e)) {
    switch (e.kind) {
      case 'NotFound':
        return handled('gone');
      case 'Conflict':
      case 'Transient':
        return retryLater(`kube-${e.kind.toLowerCase()}`);
      case 'Forbidden':
      case 'Invalid':
        // Our own misconfiguration or bug: redelivery may help after a fix; never a 4xx (that
        // would dead-letter the event) and never the API server's code.
        return { status: 500, result: `kube-${e.kind.toLowerCase()}` };
    }
  }
  return { status: 500, result: 'internal-error' };
}
