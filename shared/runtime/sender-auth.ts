// Sender authentication at the HTTP door (docs/adr/0056): with RECOVERY_AUTH=oidc every delivery
// must carry the bearer token Knative's dispatcher attaches for the Trigger's OIDC identity, for
// this Service's audience. The API server says whose it is (TokenReview); the verdict is kept
// until the token expires (bounded LRU), and concurrent deliveries with one token share one
// review, so a warm function makes at most one TokenReview per token. No token, a token that is
// not a JWT, expired or for another audience: 401 before any API call. A review that fails
// (timeout, 429, 5xx, a missing RBAC rule): 503, so the Broker redelivers; never a pass.

import type { IncomingHttpHeaders } from 'node:http';
import {
  bearerToken,
  cacheUntil,
  ExpiringLru,
  precheck,
  reviewVerdict,
  unverifiedClaims,
  type Rejection,
  type SenderAuthConfig,
  type SenderVerdict,
} from '../core/access/sender-auth.js';
import { isKubeError } from '../kube/errors.js';
import type { TokenReviewer } from '../kube/token-review.js';

/** What the door answers: pass with the sender's username, or refuse with a status. */
export type SenderCheckResult =
  | { readonly ok: true; readonly username: string; readonly reviewed: boolean }
  | {
      readonly ok: false;
      readonly status: 401 | 403 | 503;
      readonly reason: Rejection | 'token review failed';
      readonly errorKind?: string;
    };

export interface SenderAuth {
  /**
   * Answers at once (no promise) when no TokenReview is needed: a kept verdict, or a token
   * refused before any API call (the warm path, bench P3); with a promise when it reviews.
   */
  check(headers: IncomingHttpHeaders): SenderCheckResult | Promise<SenderCheckResult>;
  /** TokenReviews started (for tests and the bench). */
  readonly reviews: number;
}

/** Verdicts kept; Knative sends one token per Trigger identity and audience, refreshed hourly. */
export const DEFAULT_CACHE_ENTRIES = 1024;
/** Knative's tokens live an hour; a verdict is never kept longer, nor past the token's exp. */
export const MAX_VERDICT_TTL_MS = 60 * 60 * 1000;

export function createSenderAuth(opts: {
  config: SenderAuthConfig;
  reviewer: TokenReviewer;
  /** The wall clock (tokens expire in real time, whatever clock the function's logic runs on). */
  now?: () => number;
  cacheEntries?: number;
}): SenderAuth {
  const audience = opts.config.audience;
  if (opts.config.mode !== 'oidc' || audience === undefined) {
    throw new Error('createSenderAuth: needs RECOVERY_AUTH=oidc and an audience');
  }
  const allowed = opts.config.allowedSenders;
  const now = opts.now ?? Date.now;
  const cache = new ExpiringLru<SenderVerdict>(opts.cacheEntries ?? DEFAULT_CACHE_ENTRIES);
  const inFlight = new Map<string, Promise<SenderVerdict>>();
  let reviews = 0;

  // The verdict is kept under the Authorization header it came in (a pure function of it gives
  // the token), so the warm path is one lookup, before any parsing of the header (bench P3).
  const review = (token: string, header: string, until: number): Promise<SenderVerdict> => {
    const pending = inFlight.get(token);
    const started =
      pending ??
      opts.reviewer
        .review(token, [audience])
        .then((answer) => reviewVerdict(answer, audience, allowed))
        .finally(() => inFlight.delete(token));
    if (pending === undefined) {
      reviews += 1;
      inFlight.set(token, started);
    }
    return started.then((verdict) => {
      cache.set(header, verdict, until, now());
      return verdict;
    });
  };

  return {
    get reviews() {
      return reviews;
    },
    check(headers) {
      const header = headers.authorization;
      const t = now();
      // The warm path: a verdict on this very header, kept no longer than its token's exp (so
      // unexpired). Keyed by the header itself: it is in memory anyway, and a hash would cost
      // more than the lookup.
      const hit = typeof header === 'string' ? cache.get(header, t) : undefined;
      if (hit !== undefined) {
        return hit.ok ? { ok: true, username: hit.username, reviewed: false } : hit;
      }
      const bearer = bearerToken(header);
      if (bearer.kind === 'missing') return { ok: false, status: 401, reason: 'missing token' };
      if (bearer.kind === 'malformed') return { ok: false, status: 401, reason: 'malformed token' };
      const claims = unverifiedClaims(bearer.token);
      const early = precheck(claims, audience, t);
      if (early !== undefined || claims === undefined) {
        return { ok: false, status: 401, reason: early ?? 'malformed token' };
      }
      return review(bearer.token, header as string, cacheUntil(claims, t, MAX_VERDICT_TTL_MS)).then(
        (verdict): SenderCheckResult =>
          verdict.ok ? { ok: true, username: verdict.username, reviewed: true } : verdict,
        (e: unknown): SenderCheckResult => ({
          ok: false,
          status: 503,
          reason: 'token review failed',
          errorKind: isKubeError(e) ? e.kind : 'unknown',
        }),
      );
    },
  };
}
