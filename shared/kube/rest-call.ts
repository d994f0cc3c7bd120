// One API request as a typed call: a 2xx JSON object comes back, anything else is thrown as a
// KubeError (errors-map.ts). Shared by the adapters built on transport.ts.

import { toKubeError, type RequestTarget } from './errors-map.js';
import type { ListPage } from './port.js';
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

/**
 * One page of a LIST: `limit` items from `continueToken` on, from the watch cache when `cached` (and
 * not continuing). The caller has validated `limit`; `query` adds selectors.
 */
export async function listPage<T>(
  call: Call,
  target: RequestTarget,
  path: string,
  o: { limit: number; continueToken?: string | undefined; cached?: boolean | undefined },
  query: Record<string, string | undefined> = {},
): Promise<ListPage<T>> {
  const continuing = o.continueToken !== undefined && o.continueToken !== '';
  const raw = await call<{
    items?: unknown;
    metadata?: { continue?: string; resourceVersion?: string };
  }>(target, {
    method: 'GET',
    path,
    query: {
      ...query,
      limit: String(o.limit),
      ...(continuing ? { continue: o.continueToken } : {}),
      // The API server refuses resourceVersion together with a continue token: the token
      // already pins the snapshot.
      ...(o.cached === true && !continuing ? { resourceVersion: '0' } : {}),
    },
  });
  if (!Array.isArray(raw.items)) throw toKubeError({ kind: 'decode', statusCode: 200 }, target);
  const page: ListPage<T> = { items: raw.items as T[] };
  const next = raw.metadata?.continue;
  if (typeof next === 'string' && next !== '') page.continueToken = next;
  const rv = raw.metadata?.resourceVersion;
  if (typeof rv === 'string' && rv !== '') page.resourceVersion = rv;
  return page;
}
