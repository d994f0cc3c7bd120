// Options, statistics and log records of the emulated Broker (broker.ts).

import type { EmuClock } from './clock.js';
import type { AnyEvent } from './cloudevent-http.js';
import type { TriggerSpec } from './manifests.js';
import type { OidcTokenSource } from './oidc-tokens.js';

export interface BrokerOptions {
  /** Broker namespace and name; the ingress path is /<namespace>/<name>. */
  namespace: string;
  name: string;
  /** Triggers; only those naming this Broker (and namespace) are used. */
  triggers: TriggerSpec[];
  /** Knative Service name -> replica base URLs. A Trigger whose Service is missing is not ready. */
  subscribers: Record<string, string[]>;
  /** Port for the ingress on 127.0.0.1 (default 0: any free port). */
  port?: number;
  /**
   * Retry delays run in REAL time, scaled by this factor (default 0.001: Knative's PT1S backoff
   * becomes 1 ms). 0 retries immediately. Retries are not put on the virtual clock on purpose:
   * `idle()` must be able to wait for them without anyone advancing the clock.
   */
  retryDelayScale?: number;
  /**
   * 'scaled-real-time' (default): retries wait in real time × retryDelayScale, inside idle().
   * 'clock': retries wait on `clock` at Knative's own delays (1 s, 2 s, 4 s ... for PT1S), outside
   * idle(): the virtual clock fires them when it is advanced, the real clock on its own
   * (docs/adr/0041-knative-retry-schedule.md). Needs a clock with setTimer and cancel.
   */
  retryOn?: 'scaled-real-time' | 'clock';
  /** Per-attempt timeout when the Trigger sets none, in real ms (default 30 000). */
  defaultTimeoutMs?: number;
  /** Probability in [0, 1] that a delivery is made twice (1: every event twice). Default 0. */
  duplicateProbability?: number;
  /** Random extra delay in [0, this] real ms before each delivery, to reorder events. Default 0. */
  reorderMaxDelayMs?: number;
  /** Seed for duplicate/reorder/replica choices (default 1). */
  seed?: number;
  /** How a replica is picked per attempt (default round-robin). */
  replicaPick?: 'round-robin' | 'random';
  /** Initial broker TTL (reply hops) for events arriving without one (default 255, as Knative). */
  ttl?: number;
  /** Stamps log records with virtual time; real Date.now() when absent. Retries wait on it with retryOn 'clock'. */
  clock?: Pick<EmuClock, 'now'> & Partial<Pick<EmuClock, 'setTimer' | 'cancel'>>;
  /** Receives one structured record per notable step (constant message, fields). */
  log?: (msg: string, fields: Record<string, unknown>) => void;
  /**
   * Eventing's authentication-oidc on (docs/adr/0056): each delivery carries a token of the
   * Trigger's OIDC identity for the subscriber's audience (none when the Trigger names no
   * audience, as in Knative). A token that cannot be had fails the attempt like a transport error.
   */
  oidc?: OidcTokenSource;
}

export type DeliveryOutcome =
  | 'delivered'
  | 'retry'
  | 'dead-letter'
  /** The Broker was closed while the delivery was pending. */
  | 'abandoned';

export interface DeliveryRecord {
  seq: number;
  trigger: string;
  /** Subscriber Service name (or the URI). */
  subscriber: string;
  url: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** This delivery is the extra copy made by the duplicate option. */
  duplicate: boolean;
  event: AnyEvent;
  /** HTTP status; undefined for a transport error. */
  status: number | undefined;
  error?: string;
  outcome: DeliveryOutcome;
  /** The CloudEvent the subscriber replied with, re-ingested into the Broker. */
  reply?: AnyEvent;
  /** Time of the attempt (virtual when a clock is given). */
  at: number;
  /** OIDC on: a short hash of the token the attempt carried (which tokens a receiver saw). */
  token?: string;
}

export interface DeadLetterRecord {
  trigger: string;
  subscriber: string;
  event: AnyEvent;
  attempts: number;
  lastStatus: number | undefined;
  lastError?: string;
  /** Where the dead-letter copy went, and its HTTP status (undefined: none mapped / transport error). */
  sink?: { url: string; status: number | undefined };
  at: number;
}

export interface IngestRecord {
  event: AnyEvent;
  origin: 'ingress' | 'reply' | 'direct';
  /** Names of the Triggers it matched. */
  matched: string[];
  at: number;
}

export interface BrokerStats {
  /** Events accepted (ingress, replies and direct ingest). */
  ingested: number;
  /** Requests refused with 400 (malformed) at the ingress. */
  rejected: number;
  /** Successful deliveries per Trigger name. */
  delivered: Record<string, number>;
  /** Attempts after the first (redeliveries). */
  redelivered: number;
  deadLettered: number;
  /** 2xx responses carrying a CloudEvent (re-ingested). */
  replies: number;
  /** 2xx responses that looked like an event but did not parse. */
  invalidReplies: number;
  /** Extra deliveries made by the duplicate option. */
  duplicated: number;
  /** Matches skipped because the subscriber Service had no replica mapped. */
  unready: number;
  /** Replies dropped because their broker TTL ran out (an event loop). */
  ttlExpired: number;
}
