// One API request as a typed call: a 2xx JSON object comes back, anything else is thrown as a
// KubeError (errors-map.ts). Shared by the adapters built on transport.ts.

import { toKubeError, type RequestTarget } from './errors-map.js';
import type { HttpRequest, Send } from './transport.js';

export type Call = <T>(target: RequestTarget, req: HttpRequest) => Promise<T>;

export function createCall(send: Send): Call {
  return async <T>(target: RequestTarget, req: HttpRequest): Promise<T> => {
    const outcome = await send(req);
    if (outcome.kind !== 'response') throw toKubeError(outcome, target);
    const { statusCode, body } = outcome;
    if (statusCode < 200 || statusCode > 299) {
      throw toKubeError({ kind: 'http', statusCode, body }, target);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      throw toKubeError({ kind: 'decode', statusCode }, target);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw toKubeError({ kind: 'decode', statusCode }, target);
    }
    return parsed as T;
  };
}
