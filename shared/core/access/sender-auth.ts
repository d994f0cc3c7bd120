// Sender authentication, the pure parts (docs/adr/0056): the setting, the bearer header, the JWT's
// claims read without trusting them, the local pre-checks that can only reject, the verdict on a
// TokenReview's answer, and the cache policy. Who the sender is comes from the API server's
// TokenReview alone; a claim read here never lets a request in.

import { checkSetting } from '../config/check.js';
import { ruleOf } from '../config/rules.js';

/** off: no check (Eventing's authentication-oidc off); oidc: every delivery needs a valid token. */
export type SenderAuthMode = 'off' | 'oidc';

export interface SenderAuthConfig {
  readonly mode: SenderAuthMode;
  /** The audience a token must be for (the Trigger's subscriber audience); set when mode is oidc. */
  readonly audience: string | undefined;
  /**
   * TokenReview usernames allowed to send (the Triggers' OIDC ServiceAccounts,
   * system:serviceaccount:<ns>:<name>); a trailing `*` matches any suffix, as in an EventPolicy's
   * `sub`. Empty: any token the API server authenticates for the audience. Always full usernames:
   * a bare ServiceAccount name in RECOVERY_AUTH_SENDERS is qualified with the install namespace.
   */
  readonly allowedSenders: readonly string[];
  /**
   * Where detect reads the token it sends to the Broker: the SinkBinding mounts its OIDC token at
   * /oidc/token when authentication-oidc is on. Set when mode is oidc.
   */
  readonly sinkTokenFile: string | undefined;
}

export const ENV_AUTH = 'RECOVERY_AUTH';
export const ENV_AUTH_AUDIENCE = 'RECOVERY_AUTH_AUDIENCE';
export const ENV_AUTH_SENDERS = 'RECOVERY_AUTH_SENDERS';
export const ENV_AUTH_SINK_TOKEN_FILE = 'RECOVERY_AUTH_SINK_TOKEN_FILE';
/** Where Eventing's SinkBinding mounts the sink's OIDC token (sources/v1 SinkBinding). */
export const DEFAULT_SINK_TOKEN_FILE = '/oidc/token';

/** A ServiceAccount name (DNS-1123 subdomain), with an optional trailing `*` pattern. */
const SERVICE_ACCOUNT_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$|^[a-z0-9][-a-z0-9.]{0,251}\*$/;

/** The TokenReview username of ServiceAccount `name` (or pattern) in `namespace`. */
export function inNamespace(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/**
 * The prefix of a function's audience: the product's API domain, not Knative's
 * `<group>/<kind>/<namespace>/<name>` (Serving publishes no audience of its own, ADR 56). It names
 * no namespace, so the Triggers' `subscriber.audience` holds under a kustomize `namespace:`
 * (docs/adr/0068); a token of another install (same audience) is still refused by the sender
 * check, whose usernames are qualified by the function's own namespace.
 */
export const FUNCTION_AUDIENCE_PREFIX = 'source-watcher-recovery.cozystack.io';

/** `source-watcher-recovery.cozystack.io/<function>`, lower case: the audience a function checks. */
export function functionAudience(service: string): string {
  return `${FUNCTION_AUDIENCE_PREFIX}/${service}`.toLowerCase();
}

/**
 * RECOVERY_AUTH (off|oidc, default off), RECOVERY_AUTH_AUDIENCE (default: the function's audience
 * from K_SERVICE, which Knative Serving sets: functionAudience, naming no namespace) and
 * RECOVERY_AUTH_SENDERS (comma-separated: a bare ServiceAccount name is one in the install
 * namespace, `system:serviceaccount:<namespace>:<name>`, so the shipped list names no namespace
 * and follows the install where it moves, docs/adr/0068; a full username, with a `:`, is taken as
 * it is). Problems are returned, not thrown, so the loader reports every bad variable at once.
 */
export function parseSenderAuthConfig(
  env: Readonly<Record<string, string | undefined>>,
  namespace: string,
): { config: SenderAuthConfig; problems: string[] } {
  const problems: string[] = [];
  const text = (key: string): string | undefined => {
    const v = env[key];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  // RECOVERY_AUTH by its rule (shared/core/config/rules.ts), as the admission policy on recovery-config reads it.
  const modeResult = checkSetting(ruleOf(ENV_AUTH), env[ENV_AUTH]);
  let mode: SenderAuthMode = 'off';
  if (modeResult.ok) mode = modeResult.value as SenderAuthMode;
  else problems.push(modeResult.problem);

  const service = text('K_SERVICE');
  const audience =
    text(ENV_AUTH_AUDIENCE) ?? (service !== undefined ? functionAudience(service) : undefined);
  if (audience !== undefined && (audience.length > 253 || /\s|,/.test(audience))) {
    problems.push(
      `${ENV_AUTH_AUDIENCE}: expected one audience (no spaces or commas, at most 253 characters)`,
    );
  }
  if (mode === 'oidc' && audience === undefined) {
    problems.push(
      `${ENV_AUTH}=oidc needs the audience to check: set ${ENV_AUTH_AUDIENCE} or run as a Knative Service (K_SERVICE)`,
    );
  }

  const listed = (text(ENV_AUTH_SENDERS) ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const s of listed) {
    if (s.length > 320 || /\s/.test(s) || s.slice(0, -1).includes('*') || s === '*') {
      problems.push(
        `${ENV_AUTH_SENDERS}: "${s.slice(0, 60)}" is not a username (a trailing * is the only pattern; * alone would allow anyone)`,
      );
    } else if (!s.includes(':') && !SERVICE_ACCOUNT_NAME.test(s)) {
      problems.push(
        `${ENV_AUTH_SENDERS}: "${s.slice(0, 60)}" is neither a username nor a ServiceAccount name (DNS-1123 subdomain)`,
      );
    }
  }
  const allowedSenders = listed.map((s) => (s.includes(':') ? s : inNamespace(namespace, s)));
  const tokenFile = text(ENV_AUTH_SINK_TOKEN_FILE) ?? DEFAULT_SINK_TOKEN_FILE;
  if (!tokenFile.startsWith('/')) {
    problems.push(
      `${ENV_AUTH_SINK_TOKEN_FILE}="${tokenFile.slice(0, 60)}": expected an absolute path`,
    );
  }
  const sinkTokenFile = mode === 'oidc' ? tokenFile : undefined;
  return { config: { mode, audience, allowedSenders, sinkTokenFile }, problems };
}

/** The longest Authorization header value looked at (ServiceAccount tokens are about 1 KB). */
export const MAX_BEARER_CHARS = 8192;

export type BearerResult =
  | { readonly kind: 'token'; readonly token: string }
  | { readonly kind: 'missing' }
  | { readonly kind: 'malformed' };

const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;

/** The token of an `Authorization: Bearer <token>` header (RFC 6750; the scheme is case-blind). */
export function bearerToken(header: string | readonly string[] | undefined): BearerResult {
  if (header === undefined || header === '') return { kind: 'missing' };
  if (typeof header !== 'string') return { kind: 'malformed' };
  if (header.length > MAX_BEARER_CHARS) return { kind: 'malformed' };
  const m = /^bearer +(\S+)$/i.exec(header.trim());
  if (m === null) return { kind: 'malformed' };
  const token = m[1] as string;
  return TOKEN68.test(token) ? { kind: 'token', token } : { kind: 'malformed' };
}

/** What a JWT says about itself. Untrusted: used only to reject early and to bound the cache. */
export interface UnverifiedClaims {
  /** Expiry, epoch ms. */
  readonly expMs: number | undefined;
  readonly audiences: readonly string[];
}

/** The payload claims of a compact JWS, or undefined when it is not one. */
export function unverifiedClaims(token: string): UnverifiedClaims | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || parts.some((p) => p === '')) return undefined;
  const json = base64UrlToText(parts[1] as string);
  if (json === undefined) return undefined;
  let payload: unknown;
  try {
    payload = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return undefined;
  const p = payload as { exp?: unknown; aud?: unknown };
  const expMs =
    typeof p.exp === 'number' && Number.isFinite(p.exp) && p.exp > 0 ? p.exp * 1000 : undefined;
  const audiences =
    typeof p.aud === 'string'
      ? [p.aud]
      : Array.isArray(p.aud)
        ? p.aud.filter((a): a is string => typeof a === 'string')
        : [];
  return { expMs, audiences };
}

function base64UrlToText(segment: string): string | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(segment)) return undefined;
  const b64 = segment.replace(/-/g, '+').replace(/_/g, '/');
  try {
    const binary = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** Tolerance for a clock behind the API server's: a token this far past exp may still be valid. */
export const EXPIRY_LEEWAY_MS = 30_000;

export type Rejection =
  | 'missing token'
  | 'malformed token'
  | 'token without expiry'
  | 'expired token'
  | 'wrong audience'
  | 'token rejected'
  | 'sender not allowed';

/**
 * The checks that need no API call and can only say no: a token that is not a JWT, carries no
 * expiry (Eventing's tokens always do), is past it, or names other audiences. Undefined: ask the
 * API server.
 */
export function precheck(
  claims: UnverifiedClaims | undefined,
  audience: string,
  nowMs: number,
): Rejection | undefined {
  if (claims === undefined) return 'malformed token';
  if (claims.expMs === undefined) return 'token without expiry';
  if (claims.expMs + EXPIRY_LEEWAY_MS <= nowMs) return 'expired token';
  if (!claims.audiences.includes(audience)) return 'wrong audience';
  return undefined;
}

/** The part of a TokenReview's status the verdict reads. */
export interface ReviewedToken {
  readonly authenticated: boolean;
  readonly username: string | undefined;
  /** status.audiences: the requested audiences the token is valid for. */
  readonly audiences: readonly string[];
}

/** Whether `username` matches one of the patterns (exact, or a prefix before a trailing `*`). */
export function senderAllowed(username: string, allowed: readonly string[]): boolean {
  if (allowed.length === 0) return true;
  return allowed.some((p) =>
    p.endsWith('*') ? username.startsWith(p.slice(0, -1)) : username === p,
  );
}

export type SenderVerdict =
  | { readonly ok: true; readonly username: string }
  | { readonly ok: false; readonly status: 401 | 403; readonly reason: Rejection };

/** The verdict on the API server's answer: authenticated, for our audience, an allowed sender. */
export function reviewVerdict(
  review: ReviewedToken,
  audience: string,
  allowed: readonly string[],
): SenderVerdict {
  if (!review.authenticated || review.username === undefined || review.username === '') {
    return { ok: false, status: 401, reason: 'token rejected' };
  }
  if (!review.audiences.includes(audience)) {
    return { ok: false, status: 401, reason: 'wrong audience' };
  }
  if (!senderAllowed(review.username, allowed)) {
    return { ok: false, status: 403, reason: 'sender not allowed' };
  }
  return { ok: true, username: review.username };
}

/** How long a reviewed token's verdict is kept: until its expiry, never past it. */
export function cacheUntil(claims: UnverifiedClaims, nowMs: number, maxTtlMs: number): number {
  const exp = claims.expMs ?? nowMs;
  return Math.min(exp, nowMs + maxTtlMs);
}

/**
 * A bounded map with expiry and least-recently-used eviction (a Map keeps insertion order: a hit
 * moves the entry to the end; the first entry is the least recently used).
 */
export class ExpiringLru<V> {
  readonly #entries = new Map<string, { value: V; until: number }>();
  /** The most recently used key: a hit on it needs no reordering (one token, many deliveries). */
  #newest: string | undefined;

  constructor(readonly maxEntries: number) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new Error('maxEntries must be a positive integer');
    }
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: string, nowMs: number): V | undefined {
    const e = this.#entries.get(key);
    if (e === undefined) return undefined;
    if (e.until <= nowMs) {
      this.#entries.delete(key);
      return undefined;
    }
    if (key !== this.#newest) {
      this.#entries.delete(key);
      this.#entries.set(key, e);
      this.#newest = key;
    }
    return e.value;
  }

  set(key: string, value: V, untilMs: number, nowMs: number): void {
    this.#entries.delete(key);
    if (untilMs <= nowMs) return;
    this.#entries.set(key, { value, until: untilMs });
    this.#newest = key;
    while (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done === true) break;
      this.#entries.delete(oldest.value);
    }
  }
}
