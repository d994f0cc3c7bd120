// The token detect sends to the Broker when authentication-oidc is on (docs/adr/0056): Eventing's
// SinkBinding keeps a token of its OIDC identity, for the Broker's audience, in a Secret it
// projects at /oidc/token, and renews it before it expires. It is read again after a minute, so a
// renewed token is picked up; a missing or unreadable file sends no token (the Broker then
// refuses with 401, the emit fails and the event is redelivered), logged once per failure.

import { readFile } from 'node:fs/promises';
import type { Logger } from './logger.js';

export const SINK_TOKEN_REREAD_MS = 60_000;
const MAX_TOKEN_BYTES = 16 * 1024;

export function fileTokenSource(opts: {
  path: string;
  logger: Logger;
  now?: () => number;
}): () => Promise<string | undefined> {
  const now = opts.now ?? Date.now;
  let cached: { token: string | undefined; readAt: number } | undefined;
  let warned = false;
  return async () => {
    const t = now();
    if (cached !== undefined && t - cached.readAt < SINK_TOKEN_REREAD_MS) return cached.token;
    let token: string | undefined;
    try {
      const text = (await readFile(opts.path, 'utf8')).trim();
      token = text !== '' && text.length <= MAX_TOKEN_BYTES ? text : undefined;
      if (token === undefined) throw new Error('empty or oversized token file');
      warned = false;
    } catch (e) {
      if (!warned) {
        opts.logger.warn(
          { path: opts.path, err: { code: (e as { code?: unknown }).code ?? 'invalid' } },
          'no OIDC token for the Broker: sending without one',
        );
        warned = true;
      }
      token = undefined;
    }
    cached = { token, readAt: t };
    return token;
  };
}
