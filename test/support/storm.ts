// The first-install storm as a fault profile of the KubeProxy (docs/adr/0040-storm-fault-profile.md):
// during a time window on the system's clock, each API request of a profiled client is answered
// 500 `etcdserver: request timed out`, or 429 with Retry-After as API Priority and Fairness
// answers, or held 2–8 s before it is forwarded, each with its own probability per client tag.
// Watch connects have their own knobs (docs/adr/0060-event-path-storm.md): held 2–8 s, closed
// mid-stream after a seeded lifetime, and answered `410 Gone` when they resume.
//
// The choice for a request depends only on the seed, the client tag, the request (verb,
// resource, subresource, namespace, name) and how many such requests that client made before:
// never on the arrival order of requests across clients or objects, so a run repeats with the
// same seed even though concurrent requests interleave differently.

import type { ApiRequestInfo, CallMatch } from './kube-proxy.js';
import { matches } from './kube-proxy.js';
import { mulberry32, MULBERRY32_STEP } from '../harness/rng.js';

export interface StormRates {
  /** Probability of 500 `etcdserver: request timed out` (the request never reaches the API server). */
  error500: number;
  /** Probability of 429 TooManyRequests with Retry-After (API Priority and Fairness). */
  tooMany: number;
  /** Probability of a delay of [delayMinMs, delayMaxMs] before the request is forwarded. */
  delayed: number;
  delayMinMs: number;
  delayMaxMs: number;
  /** The Retry-After header of the 429 answers, in seconds (APF sends 1). */
  retryAfterSeconds: number;
}

/** What the storm does to a client's watch connects (docs/adr/0060). */
export interface StormWatchRates {
  /** Probability that a watch connect is held [watchHeldMinMs, watchHeldMaxMs] before it is forwarded. */
  watchHeld: number;
  watchHeldMinMs: number;
  watchHeldMaxMs: number;
  /**
   * Mid-stream closes per minute of an open watch: each forwarded watch gets a seeded exponential
   * lifetime of mean 1/rate minutes, and the proxy ends the stream then (as kube-apiserver ends
   * one: a clean end), when that moment is inside the window. 0: never.
   */
  watchClosesPerMinute: number;
  /**
   * Probability that a resumed watch (one that follows a watch of the same resource, not a list)
   * is answered the way kube-apiserver answers a compacted resourceVersion: 200, one ERROR event
   * with a 410 Expired Status, end of stream. The client must re-list.
   */
  watchGoneOnResume: number;
}

export interface StormClientProfile extends StormRates, StormWatchRates {
  /** Requests of this client the storm leaves alone. */
  exclude: CallMatch[];
}

export interface StormOptions {
  /** Seed of every choice (a run with the same seed and the same requests repeats). */
  seed: number;
  /** The window on the system's clock: [startMs, startMs + durationMs). */
  startMs: number;
  durationMs: number;
  /** Per client tag; a tag without a profile gets no faults. */
  profiles: Readonly<Record<string, Partial<StormClientProfile>>>;
}

export type StormDecision =
  | { kind: 'error500' }
  | { kind: 'tooMany'; retryAfterSeconds: number }
  | { kind: 'delayed'; delayMs: number }
  /** A watch answered 410 Expired (in the stream, as kube-apiserver does). */
  | { kind: 'watchGone' }
  /** A watch held `delayMs`, then forwarded; with closeAfterMs, ended that long after it arrived. */
  | { kind: 'watchHeld'; delayMs: number; closeAfterMs?: number }
  /** A watch forwarded at once and ended mid-stream `closeAfterMs` after it arrived. */
  | { kind: 'watchClosed'; closeAfterMs: number };

const NO_WATCH_FAULTS: StormWatchRates = {
  watchHeld: 0,
  watchHeldMinMs: 2000,
  watchHeldMaxMs: 8000,
  watchClosesPerMinute: 0,
  watchGoneOnResume: 0,
};

/** The storm for the functions: 20 % 500, 10 % 429, 20 % delayed 2–8 s. */
export const FUNCTIONS_STORM: StormClientProfile = {
  error500: 0.2,
  tooMany: 0.1,
  delayed: 0.2,
  delayMinMs: 2000,
  delayMaxMs: 8000,
  retryAfterSeconds: 1,
  ...NO_WATCH_FAULTS,
  exclude: [],
};

/**
 * The event path (issue 33, docs/adr/0060): the Knative adapters' lists degrade as the functions'
 * requests do (20 % 500, 10 % 429, 20 % held 2–8 s), 20 % of their watch connects are held
 * 2–8 s, an open watch is closed mid-stream about once every two minutes, and a quarter of the
 * resumes after a close are answered 410 Gone (a relist).
 */
export const EVENT_PATH_STORM: StormClientProfile = {
  ...FUNCTIONS_STORM,
  watchHeld: 0.2,
  watchHeldMinMs: 2000,
  watchHeldMaxMs: 8000,
  watchClosesPerMinute: 0.5,
  watchGoneOnResume: 0.25,
};

/**
 * source-watcher "mildly degraded": a quarter of the functions' rates. Its status writes are left
 * alone by default: a failed conditions write of the simulator IS a lost Ready write
 * (fluxcd/pkg#934), and the scenario decides which AGs lose theirs (the fleet's M), so that every
 * stall is one the test knows about. Pass `exclude: []` to let the storm lose writes at random too.
 */
export const SOURCE_WATCHER_STORM: StormClientProfile = {
  error500: 0.05,
  tooMany: 0.025,
  delayed: 0.05,
  delayMinMs: 2000,
  delayMaxMs: 8000,
  retryAfterSeconds: 1,
  ...NO_WATCH_FAULTS,
  exclude: [{ verb: 'patch', resource: 'artifactgenerators', subresource: 'status' }],
};

export const STORM_FUNCTION_TAGS = ['detect', 'force-drift', 'surface-stalled'] as const;
/**
 * What a system under the storm on the virtual clock needs beyond the product's defaults: a held
 * call waits for virtual time, which costs real time (every clock step settles), so the product's
 * real-time request timeout (10 s) and the Broker's real-time delivery timeout (30 s) would fire
 * on the harness's slowness, not on the storm (its delays stay under both). Both are raised to
 * 10 minutes of real time; the delays themselves stay as they are.
 */
export const STORM_VIRTUAL_CLOCK_ENV: Readonly<Record<string, string>> = {
  KUBE_REQUEST_TIMEOUT_MS: String(10 * 60_000),
};
export const STORM_VIRTUAL_CLOCK_DELIVERY_TIMEOUT_MS = 10 * 60_000;

/** Issue 19: an 8-minute storm. */
export const STORM_DURATION_MS = 8 * 60_000;

/** The client tags of the Knative adapters (test/harness/system.ts). */
export const STORM_EVENT_PATH_TAGS = ['apiserversource', 'pingsource'] as const;

/**
 * The storm as it happens (issue 33): the functions at full storm, source-watcher mildly, and the
 * event path (the ApiServerSources' and the PingSource adapter's lists and watches) degraded too.
 */
export function defaultStormProfiles(): Record<string, StormClientProfile> {
  const out = functionsOnlyStormProfiles();
  for (const tag of STORM_EVENT_PATH_TAGS) out[tag] = { ...EVENT_PATH_STORM };
  return out;
}

/**
 * ADR 40's storm (issue 19), kept for comparison: the functions and source-watcher degraded, the
 * Knative adapters untouched.
 */
export function functionsOnlyStormProfiles(): Record<string, StormClientProfile> {
  const out: Record<string, StormClientProfile> = {};
  for (const tag of STORM_FUNCTION_TAGS) out[tag] = { ...FUNCTIONS_STORM };
  out['source-watcher'] = { ...SOURCE_WATCHER_STORM };
  return out;
}

function checkProbability(tag: string, name: string, p: number): void {
  if (typeof p !== 'number' || !(p >= 0 && p <= 1)) {
    throw new RangeError(`storm profile ${tag}: ${name} must be within [0, 1], got ${String(p)}`);
  }
}

function resolveProfile(tag: string, p: Partial<StormClientProfile>): StormClientProfile {
  const out: StormClientProfile = {
    error500: p.error500 ?? 0,
    tooMany: p.tooMany ?? 0,
    delayed: p.delayed ?? 0,
    delayMinMs: p.delayMinMs ?? FUNCTIONS_STORM.delayMinMs,
    delayMaxMs: p.delayMaxMs ?? FUNCTIONS_STORM.delayMaxMs,
    retryAfterSeconds: p.retryAfterSeconds ?? FUNCTIONS_STORM.retryAfterSeconds,
    watchHeld: p.watchHeld ?? 0,
    watchHeldMinMs: p.watchHeldMinMs ?? NO_WATCH_FAULTS.watchHeldMinMs,
    watchHeldMaxMs: p.watchHeldMaxMs ?? NO_WATCH_FAULTS.watchHeldMaxMs,
    watchClosesPerMinute: p.watchClosesPerMinute ?? 0,
    watchGoneOnResume: p.watchGoneOnResume ?? 0,
    exclude: p.exclude ?? [],
  };
  checkProbability(tag, 'error500', out.error500);
  checkProbability(tag, 'tooMany', out.tooMany);
  checkProbability(tag, 'delayed', out.delayed);
  if (out.error500 + out.tooMany + out.delayed > 1 + 1e-9) {
    throw new RangeError(`storm profile ${tag}: the three probabilities add up to more than 1`);
  }
  if (
    !Number.isFinite(out.delayMinMs) ||
    !Number.isFinite(out.delayMaxMs) ||
    out.delayMinMs < 0 ||
    out.delayMaxMs < out.delayMinMs
  ) {
    throw new RangeError(
      `storm profile ${tag}: delays must satisfy 0 <= delayMinMs <= delayMaxMs, got ${out.delayMinMs}..${out.delayMaxMs}`,
    );
  }
  checkProbability(tag, 'watchHeld', out.watchHeld);
  checkProbability(tag, 'watchGoneOnResume', out.watchGoneOnResume);
  if (out.watchHeld + out.watchGoneOnResume > 1 + 1e-9) {
    throw new RangeError(
      `storm profile ${tag}: watchHeld + watchGoneOnResume add up to more than 1`,
    );
  }
  if (
    !Number.isFinite(out.watchHeldMinMs) ||
    !Number.isFinite(out.watchHeldMaxMs) ||
    out.watchHeldMinMs < 0 ||
    out.watchHeldMaxMs < out.watchHeldMinMs
  ) {
    throw new RangeError(
      `storm profile ${tag}: watch holds must satisfy 0 <= watchHeldMinMs <= watchHeldMaxMs, got ${out.watchHeldMinMs}..${out.watchHeldMaxMs}`,
    );
  }
  if (!Number.isFinite(out.watchClosesPerMinute) || out.watchClosesPerMinute < 0) {
    throw new RangeError(
      `storm profile ${tag}: watchClosesPerMinute must be finite and >= 0, got ${out.watchClosesPerMinute}`,
    );
  }
  if (!Number.isInteger(out.retryAfterSeconds) || out.retryAfterSeconds < 1) {
    throw new RangeError(
      `storm profile ${tag}: retryAfterSeconds must be a positive integer, got ${out.retryAfterSeconds}`,
    );
  }
  return out;
}

/** FNV-1a over the text, then mixed with the seed (mulberry32 finaliser): a float in [0, 1). */
function uniform(seed: number, text: string): number {
  let h = 0x811c9dc5 ^ (seed >>> 0);
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mulberry32((h + MULBERRY32_STEP) >>> 0);
}

export interface StormCounts {
  /** Requests (not watches) of profiled clients inside the window. */
  seen: number;
  error500: number;
  tooMany: number;
  delayed: number;
  /** Watch connects inside the window of clients with watch faults, and what the storm did. */
  watches: number;
  watchHeld: number;
  watchClosed: number;
  watchGone: number;
}

export class StormProfile {
  readonly counts: StormCounts = {
    seen: 0,
    error500: 0,
    tooMany: 0,
    delayed: 0,
    watches: 0,
    watchHeld: 0,
    watchClosed: 0,
    watchGone: 0,
  };
  readonly #seed: number;
  readonly #startMs: number;
  readonly #endMs: number;
  readonly #profiles = new Map<string, StormClientProfile>();
  readonly #occurrences = new Map<string, number>();
  /** Per client and collection: whether its last list-or-watch was a watch (the next one resumes). */
  readonly #watchedLast = new Map<string, boolean>();

  constructor(o: StormOptions) {
    if (!Number.isInteger(o.seed))
      throw new TypeError(`storm: seed must be an integer, got ${o.seed}`);
    if (!Number.isFinite(o.startMs) || !Number.isFinite(o.durationMs) || o.durationMs < 0) {
      throw new RangeError('storm: startMs must be finite and durationMs >= 0');
    }
    for (const [tag, p] of Object.entries(o.profiles)) {
      this.#profiles.set(tag, resolveProfile(tag, p));
    }
    this.#seed = o.seed;
    this.#startMs = o.startMs;
    this.#endMs = o.startMs + o.durationMs;
  }

  get startMs(): number {
    return this.#startMs;
  }

  active(nowMs: number): boolean {
    return nowMs >= this.#startMs && nowMs < this.#endMs;
  }

  /** What the storm does to this request at this moment, or undefined (forward it untouched). */
  decide(call: ApiRequestInfo & { clientTag: string }, nowMs: number): StormDecision | undefined {
    const collection = `${call.clientTag}|${call.group}|${call.resource}|${call.namespace}`;
    const resumes = this.#watchedLast.get(collection) === true;
    if (call.verb === 'watch' || call.verb === 'list') {
      this.#watchedLast.set(collection, call.verb === 'watch');
    }
    if (!this.active(nowMs)) return undefined;
    const profile = this.#profiles.get(call.clientTag);
    if (profile === undefined) return undefined;
    if (profile.exclude.some((m) => matches(call, m))) return undefined;
    const what = `${call.clientTag}|${call.verb}|${call.group}|${call.resource}|${call.subresource}|${call.namespace}|${call.name}`;
    const nth = (this.#occurrences.get(what) ?? 0) + 1;
    this.#occurrences.set(what, nth);
    if (call.verb === 'watch') {
      const none =
        profile.watchHeld === 0 &&
        profile.watchGoneOnResume === 0 &&
        profile.watchClosesPerMinute === 0;
      return none ? undefined : this.#decideWatch(profile, `${what}|${nth}`, resumes, nowMs);
    }
    this.counts.seen += 1;
    const u = uniform(this.#seed, `${what}|${nth}`);
    if (u < profile.error500) {
      this.counts.error500 += 1;
      return { kind: 'error500' };
    }
    if (u < profile.error500 + profile.tooMany) {
      this.counts.tooMany += 1;
      return { kind: 'tooMany', retryAfterSeconds: profile.retryAfterSeconds };
    }
    if (u < profile.error500 + profile.tooMany + profile.delayed) {
      this.counts.delayed += 1;
      const v = uniform(this.#seed ^ 0x5bd1e995, `${what}|${nth}|delay`);
      const span = profile.delayMaxMs - profile.delayMinMs;
      return { kind: 'delayed', delayMs: Math.round(profile.delayMinMs + v * span) };
    }
    return undefined;
  }

  /**
   * For a watch already open when the storm starts (the adapters watch from the install on): ms
   * from now until the storm closes it, or undefined. Lifetimes are memoryless, so one drawn from
   * now is what the watch has left.
   */
  closeOpenWatch(call: ApiRequestInfo & { clientTag: string }, nowMs: number): number | undefined {
    if (!this.active(nowMs) || call.verb !== 'watch') return undefined;
    const profile = this.#profiles.get(call.clientTag);
    if (profile === undefined || profile.exclude.some((m) => matches(call, m))) return undefined;
    const what = `${call.clientTag}|open|${call.group}|${call.resource}|${call.namespace}`;
    const nth = (this.#occurrences.get(what) ?? 0) + 1;
    this.#occurrences.set(what, nth);
    return this.#lifetime(profile, `${what}|${nth}`, nowMs);
  }

  /** A seeded exponential lifetime of mean 1/rate minutes (at least 1 s) ending in the window. */
  #lifetime(profile: StormClientProfile, id: string, fromMs: number): number | undefined {
    if (profile.watchClosesPerMinute <= 0) return undefined;
    const w = uniform(this.#seed ^ 0x2f6b1c3d, `${id}|lifetime`);
    const life = Math.max(
      1000,
      Math.round((-Math.log(1 - w) / profile.watchClosesPerMinute) * 60_000),
    );
    if (fromMs + life >= this.#endMs) return undefined;
    this.counts.watchClosed += 1;
    return life;
  }

  #decideWatch(
    profile: StormClientProfile,
    id: string,
    resumes: boolean,
    nowMs: number,
  ): StormDecision | undefined {
    this.counts.watches += 1;
    const u = uniform(this.#seed, id);
    const gone = resumes ? profile.watchGoneOnResume : 0;
    if (u < gone) {
      this.counts.watchGone += 1;
      return { kind: 'watchGone' };
    }
    let delayMs = 0;
    if (u < gone + profile.watchHeld) {
      const v = uniform(this.#seed ^ 0x5bd1e995, `${id}|delay`);
      const span = profile.watchHeldMaxMs - profile.watchHeldMinMs;
      delayMs = Math.round(profile.watchHeldMinMs + v * span);
      this.counts.watchHeld += 1;
    }
    const life = this.#lifetime(profile, id, nowMs + delayMs);
    const closeAfterMs = life === undefined ? undefined : delayMs + life;
    if (delayMs > 0) {
      return closeAfterMs === undefined
        ? { kind: 'watchHeld', delayMs }
        : { kind: 'watchHeld', delayMs, closeAfterMs };
    }
    return closeAfterMs === undefined ? undefined : { kind: 'watchClosed', closeAfterMs };
  }
}

/**
 * The Status body kube-apiserver sends when etcd times out a request: code 500 and etcd's
 * message, with no reason (kubectl prints "Error from server: etcdserver: request timed out").
 */
export function etcdTimeoutStatus(): Record<string, unknown> {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'etcdserver: request timed out',
    code: 500,
  };
}

/** The Status body API Priority and Fairness sends when it rejects a request. */
export function apfRejectedStatus(retryAfterSeconds: number): Record<string, unknown> {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'Too many requests, please try again later.',
    reason: 'TooManyRequests',
    details: { retryAfterSeconds },
    code: 429,
  };
}

/**
 * The watch event kube-apiserver streams (HTTP 200) when a watch asks for a resourceVersion
 * compaction removed: one ERROR event with a 410 Expired Status, then the end of the stream.
 */
export function watchExpiredEvent(resourceVersion: string): Record<string, unknown> {
  return {
    type: 'ERROR',
    object: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `too old resource version: ${resourceVersion === '' ? '0' : resourceVersion}`,
      reason: 'Expired',
      code: 410,
    },
  };
}
