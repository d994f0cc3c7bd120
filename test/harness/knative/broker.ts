// An in-process Knative Broker: an HTTP ingress on 127.0.0.1 (POST /<namespace>/<broker>, binary
// or structured CloudEvents; 202 on accept, 400 on malformed) and Trigger routing to subscriber
// replicas, with Knative's delivery rules:
// - at least once, concurrently (so unordered); optional duplicates and random extra delays;
// - binary-mode POST; 2xx is done, and a CloudEvent in a 2xx response is re-ingested into this
//   Broker (matched against every Trigger) with the broker TTL decremented, so a loop dies out;
// - 5xx, 404, 408, 409, 429 and transport errors are redelivered up to the Trigger's `retry` with
//   its backoff (retry n from 0, as Knative counts: exponential delay * 2^n, linear delay * n,
//   so a linear first retry is immediate), then dead-lettered;
//   any other status (other 4xx, 3xx) goes to the dead-letter sink at once;
// - a dead-lettered event is recorded and, when the dead-letter Service is mapped, POSTed to it
//   with the knativeerrordest / knativeerrorcode / knativeerrordata extensions.
// Retry delays run in real time scaled by `retryDelayScale`, or on the Broker's clock at Knative's
// own schedule with `retryOn: 'clock'` (see BrokerOptions and docs/adr/0041-knative-retry-schedule.md).

import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  carriesEvent,
  MalformedEventError,
  parseHttpEvent,
  postBinary,
  withAttributes,
} from './cloudevent-http.js';
import type { AnyEvent, HttpOutcome } from './cloudevent-http.js';
import type { Destination, TriggerSpec } from './manifests.js';
import { PendingWork, sleep } from './pending.js';
import { rngInt, seededRng } from '../rng.js';
import type { Rng } from '../rng.js';
import { triggerMatches } from './trigger-filter.js';
import type {
  BrokerOptions,
  BrokerStats,
  DeadLetterRecord,
  DeliveryOutcome,
  DeliveryRecord,
  IngestRecord,
} from './broker-types.js';

export type * from './broker-types.js';

/** Knative's initial broker TTL: how many reply hops an event may take. */
export const BROKER_TTL = 255;
const TTL_EXTENSION = 'knativebrokerttl';
const REDELIVERED_STATUSES = new Set([404, 408, 409, 429]);
const MAX_BODY_BYTES = 10 * 1024 * 1024;
const ERROR_DATA_BYTES = 1024;

interface RetryEntry {
  run(): void;
  abandon(): void;
}

export function isRedeliverable(status: number | undefined): boolean {
  return status === undefined || status >= 500 || REDELIVERED_STATUSES.has(status);
}

/**
 * Knative's wait after failed attempt n (1-based) before the next one. Knative's dispatcher counts
 * its retries from 0 (r = n − 1): exponential backoffDelay × 2^r (PT1S: 1 s, 2 s, 4 s, 8 s, 16 s,
 * 32 s), linear backoffDelay × r (PT1S: 0 s, 1 s, 2 s, 3 s: the first retry is immediate).
 */
export function retryDelayMs(
  policy: 'exponential' | 'linear',
  backoffDelayMs: number,
  attempt: number,
): number {
  const retry = attempt - 1;
  return policy === 'linear' ? backoffDelayMs * retry : backoffDelayMs * 2 ** retry;
}

export class Broker {
  readonly stats: BrokerStats = {
    ingested: 0,
    rejected: 0,
    delivered: {},
    redelivered: 0,
    deadLettered: 0,
    replies: 0,
    invalidReplies: 0,
    duplicated: 0,
    unready: 0,
    ttlExpired: 0,
  };
  /** Every delivery attempt, in the order attempts finished. */
  readonly deliveries: DeliveryRecord[] = [];
  readonly deadLetters: DeadLetterRecord[] = [];
  /** Every accepted event, in arrival order. */
  readonly ingested: IngestRecord[] = [];

  readonly #opts: BrokerOptions;
  readonly #triggers: TriggerSpec[];
  readonly #subscribers = new Map<string, string[]>();
  readonly #roundRobin = new Map<string, number>();
  readonly #pending = new PendingWork();
  readonly #abort = new AbortController();
  readonly #rng: Rng;
  #server: Server | undefined;
  #url: string | undefined;
  #seq = 0;
  readonly #ttl: number;
  /**
   * Retries waiting on the clock (retryOn 'clock'), one clock timer per moment: every retry due
   * then starts at one clock step. Each entry runs the retry, or records it abandoned.
   */
  readonly #retryMoments = new Map<number, { timer: number; due: RetryEntry[] }>();

  constructor(opts: BrokerOptions) {
    const p = opts.duplicateProbability ?? 0;
    if (!(p >= 0 && p <= 1)) throw new Error('duplicateProbability must be within [0, 1]');
    if ((opts.retryDelayScale ?? 0) < 0) throw new Error('retryDelayScale must not be negative');
    if (
      opts.retryOn === 'clock' &&
      (opts.clock?.setTimer === undefined || opts.clock.cancel === undefined)
    ) {
      throw new Error("retryOn 'clock' needs a clock with setTimer and cancel");
    }
    if ((opts.reorderMaxDelayMs ?? 0) < 0)
      throw new Error('reorderMaxDelayMs must not be negative');
    this.#opts = opts;
    this.#triggers = opts.triggers.filter(
      (t) => t.broker === opts.name && t.namespace === opts.namespace,
    );
    for (const t of this.#triggers) this.stats.delivered[t.name] = 0;
    for (const [name, urls] of Object.entries(opts.subscribers)) this.setSubscriber(name, urls);
    this.#rng = seededRng(opts.seed ?? 1);
    this.#ttl = opts.ttl ?? BROKER_TTL;
    if (!Number.isInteger(this.#ttl) || this.#ttl < 1)
      throw new Error('ttl must be a positive integer');
    // Every in-flight delivery listens on this signal.
    setMaxListeners(0, this.#abort.signal);
  }

  /** Starts the ingress; resolves with its URL. */
  async start(): Promise<string> {
    if (this.#url) return this.#url;
    const server = createServer((req, res) => {
      void this.#pending.track(this.#handle(req, res));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#opts.port ?? 0, '127.0.0.1', () => resolve());
    });
    this.#server = server;
    const { port } = server.address() as AddressInfo;
    this.#url = `http://127.0.0.1:${port}/${this.#opts.namespace}/${this.#opts.name}`;
    return this.#url;
  }

  /** POST CloudEvents here (after start()). */
  get ingressUrl(): string {
    if (!this.#url) throw new Error('broker not started');
    return this.#url;
  }

  /** Maps (or remaps, or with [] unmaps) a subscriber Service to its replica URLs. */
  setSubscriber(service: string, urls: string[]): void {
    for (const u of urls) new URL(u); // throws on a malformed URL before anything changes
    this.#subscribers.set(service, [...urls]);
  }

  /**
   * Routes an event as if it had arrived at the ingress. Returns the names of the Triggers it
   * matched (and will be delivered to).
   */
  ingest(event: AnyEvent): string[] {
    return this.#ingest(event, 'direct', undefined);
  }

  /** Resolves when no request, delivery, retry or dead-letter send is in flight or pending. */
  idle(): Promise<void> {
    return this.#pending.idle();
  }

  /** Attempts for one Trigger, in order. */
  deliveriesTo(trigger: string): DeliveryRecord[] {
    return this.deliveries.filter((d) => d.trigger === trigger);
  }

  /** Stops the ingress, abandons pending retries and waits for in-flight work to end. */
  async close(): Promise<void> {
    this.#abort.abort();
    const moments = [...this.#retryMoments.values()];
    this.#retryMoments.clear();
    for (const { timer, due } of moments) {
      this.#opts.clock?.cancel?.(timer);
      for (const entry of due) entry.abandon();
    }
    const server = this.#server;
    this.#server = undefined;
    if (server) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    }
    await this.#pending.idle();
  }

  // ---- ingress --------------------------------------------------------------------------------

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== `/${this.#opts.namespace}/${this.#opts.name}`) {
      return reply(res, 404, `no broker at ${path ?? ''}`);
    }
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      return reply(res, 405, 'only POST is accepted');
    }
    let body: Buffer;
    try {
      body = await readBody(req);
    } catch (e) {
      return reply(res, 413, e instanceof Error ? e.message : String(e));
    }
    let event: AnyEvent;
    try {
      event = parseHttpEvent(req.headers, body);
    } catch (e) {
      this.stats.rejected += 1;
      const message = e instanceof MalformedEventError ? e.message : String(e);
      this.#log('broker rejected event', { status: 400, reason: message });
      return reply(res, 400, message);
    }
    this.#ingest(event, 'ingress', undefined);
    return reply(res, 202, '');
  }

  #ingest(incoming: AnyEvent, origin: IngestRecord['origin'], ttl: number | undefined): string[] {
    const carried = Number(incoming[TTL_EXTENSION] ?? Number.NaN);
    const hops = ttl ?? (Number.isInteger(carried) && carried > 0 ? carried : this.#ttl);
    const event =
      incoming[TTL_EXTENSION] === undefined
        ? incoming
        : withAttributes(incoming, { [TTL_EXTENSION]: undefined });
    const matched: string[] = [];
    for (const trigger of this.#triggers) {
      if (!triggerMatches(trigger, event)) continue;
      if (trigger.subscriber.service !== undefined && this.#replicas(trigger.subscriber) === 0) {
        this.stats.unready += 1;
        this.#log('broker trigger not ready', { trigger: trigger.name, id: event.id });
        continue;
      }
      matched.push(trigger.name);
      void this.#pending.track(this.#deliver(trigger, event, hops, false));
      const p = this.#opts.duplicateProbability ?? 0;
      if (p > 0 && this.#rng() < p) {
        this.stats.duplicated += 1;
        void this.#pending.track(this.#deliver(trigger, event, hops, true));
      }
    }
    this.stats.ingested += 1;
    this.ingested.push({ event, origin, matched, at: this.#now() });
    this.#log('broker ingested event', {
      id: event.id,
      type: event.type,
      source: event.source,
      origin,
      matched,
    });
    return matched;
  }

  // ---- delivery -------------------------------------------------------------------------------

  /** Requests, deliveries and (scaled real-time) retries in flight: what idle() waits for. */
  get inFlight(): number {
    return this.#pending.count;
  }

  /** Retries waiting on the clock (retryOn 'clock'); they do not count for idle(). */
  get retriesWaiting(): number {
    let n = 0;
    for (const { due } of this.#retryMoments.values()) n += due.length;
    return n;
  }

  async #deliver(
    trigger: TriggerSpec,
    event: AnyEvent,
    hops: number,
    duplicate: boolean,
    firstAttempt = 1,
  ): Promise<void> {
    const signal = this.#abort.signal;
    const reorder = this.#opts.reorderMaxDelayMs ?? 0;
    if (reorder > 0 && firstAttempt === 1) await sleep(rngInt(this.#rng, 0, reorder), signal);
    const { delivery } = trigger;
    const scale = this.#opts.retryDelayScale ?? 0.001;
    const timeoutMs = delivery.timeoutMs ?? this.#opts.defaultTimeoutMs ?? 30_000;
    const subscriber = trigger.subscriber.service;
    const total = 1 + delivery.retry;
    let last: HttpOutcome & { token?: string } = {
      status: undefined,
      error: 'not attempted',
      headers: {},
      body: Buffer.alloc(0),
    };
    let attempts = 0;
    let lastUrl = '';
    for (let attempt = firstAttempt; attempt <= total; attempt++) {
      if (signal.aborted) return this.#abandon(trigger, event, duplicate, attempt);
      if (attempt > 1) this.stats.redelivered += 1;
      attempts = attempt;
      const url = this.#pick(trigger.subscriber);
      lastUrl = url ?? lastUrl;
      last =
        url === undefined
          ? { status: undefined, error: 'no replica', headers: {}, body: Buffer.alloc(0) }
          : await this.#post(trigger, trigger.subscriber, url, event, { timeoutMs, signal });
      const token = last.token;
      if (signal.aborted) return this.#abandon(trigger, event, duplicate, attempt);
      const base = {
        trigger: trigger.name,
        subscriber,
        url: url ?? '',
        attempt,
        duplicate,
        event,
        ...(token !== undefined ? { token } : {}),
      };
      if (last.status !== undefined && last.status >= 200 && last.status < 300) {
        const replyEvent = this.#handleReply(trigger, event, last, hops);
        this.#record({ ...base, status: last.status, outcome: 'delivered' }, replyEvent);
        this.stats.delivered[trigger.name] = (this.stats.delivered[trigger.name] ?? 0) + 1;
        if (replyEvent) this.#ingest(replyEvent, 'reply', hops - 1);
        return;
      }
      const retry = isRedeliverable(last.status) && attempt < total;
      this.#record(
        { ...base, status: last.status, outcome: retry ? 'retry' : 'dead-letter' },
        undefined,
        last.error,
      );
      if (!retry) break;
      const delay = retryDelayMs(delivery.backoffPolicy, delivery.backoffDelayMs, attempt);
      if (this.#opts.retryOn === 'clock') {
        this.#retryOnClock(trigger, event, hops, duplicate, attempt + 1, delay);
        return;
      }
      await sleep(delay * scale, signal);
    }
    await this.#deadLetter(trigger, event, attempts, last, lastUrl);
  }

  /**
   * One attempt, with the Trigger's OIDC token for `to`'s audience when OIDC is on (Knative's
   * filter sends with the Trigger's identity, to the subscriber and to the dead-letter sink).
   */
  async #post(
    trigger: TriggerSpec,
    to: Destination,
    url: string,
    event: AnyEvent,
    opts: { timeoutMs: number; signal: AbortSignal },
  ): Promise<HttpOutcome & { token?: string }> {
    const oidc = this.#opts.oidc;
    if (oidc === undefined || to.audience === undefined) return postBinary(url, event, opts);
    let bearer: string;
    try {
      bearer = await oidc.tokenFor(
        { group: 'eventing.knative.dev', kind: 'Trigger', name: trigger.name },
        to.audience,
      );
    } catch (e) {
      return {
        status: undefined,
        error: `could not get JWT: ${e instanceof Error ? e.message : String(e)}`,
        headers: {},
        body: Buffer.alloc(0),
      };
    }
    const token = createHash('sha256').update(bearer).digest('hex').slice(0, 12);
    return { ...(await postBinary(url, event, { ...opts, bearer })), token };
  }

  /**
   * Schedules the next attempt on the clock, outside the pending work: idle() does not wait for
   * it, the clock fires it (a virtual clock when it is advanced, the real one on its own).
   */
  #retryOnClock(
    trigger: TriggerSpec,
    event: AnyEvent,
    hops: number,
    duplicate: boolean,
    attempt: number,
    delayMs: number,
  ): void {
    const clock = this.#opts.clock;
    if (clock?.setTimer === undefined) return;
    const at = clock.now() + delayMs;
    const entry: RetryEntry = {
      run: () => void this.#pending.track(this.#deliver(trigger, event, hops, duplicate, attempt)),
      abandon: () => this.#abandon(trigger, event, duplicate, attempt),
    };
    const moment = this.#retryMoments.get(at);
    if (moment !== undefined) {
      moment.due.push(entry);
      return;
    }
    const timer = clock.setTimer(at, () => {
      const due = this.#retryMoments.get(at)?.due ?? [];
      this.#retryMoments.delete(at);
      if (this.#abort.signal.aborted) return;
      for (const e of due) e.run();
    }) as number;
    this.#retryMoments.set(at, { timer, due: [entry] });
  }

  /** The reply event to re-ingest, if the 2xx response carried a valid one with TTL left. */
  #handleReply(
    trigger: TriggerSpec,
    event: AnyEvent,
    out: HttpOutcome,
    hops: number,
  ): AnyEvent | undefined {
    if (!carriesEvent(out.headers)) return undefined;
    let replyEvent: AnyEvent;
    try {
      replyEvent = parseHttpEvent(out.headers, out.body);
    } catch (e) {
      this.stats.invalidReplies += 1;
      this.#log('broker invalid reply', {
        trigger: trigger.name,
        id: event.id,
        reason: e instanceof Error ? e.message : String(e),
      });
      return undefined;
    }
    this.stats.replies += 1;
    if (hops - 1 <= 0) {
      this.stats.ttlExpired += 1;
      this.#log('broker reply dropped ttl expired', { trigger: trigger.name, id: replyEvent.id });
      return undefined;
    }
    return replyEvent;
  }

  async #deadLetter(
    trigger: TriggerSpec,
    event: AnyEvent,
    attempts: number,
    last: HttpOutcome,
    lastUrl: string,
  ): Promise<void> {
    const record: DeadLetterRecord = {
      trigger: trigger.name,
      subscriber: trigger.subscriber.service,
      event,
      attempts,
      lastStatus: last.status,
      at: this.#now(),
    };
    if (last.error !== undefined) record.lastError = last.error;
    const sink = trigger.delivery.deadLetterSink;
    const url = sink ? this.#pick(sink) : undefined;
    if (sink !== undefined && url !== undefined && !this.#abort.signal.aborted) {
      const extensions: Record<string, string | undefined> = { knativeerrordest: lastUrl };
      if (last.status !== undefined) extensions.knativeerrorcode = String(last.status);
      if (last.body.length > 0) {
        extensions.knativeerrordata = last.body.subarray(0, ERROR_DATA_BYTES).toString('base64');
      }
      const out = await this.#post(trigger, sink, url, withAttributes(event, extensions), {
        timeoutMs: this.#opts.defaultTimeoutMs ?? 30_000,
        signal: this.#abort.signal,
      });
      record.sink = { url, status: out.status };
    }
    this.deadLetters.push(record);
    this.stats.deadLettered += 1;
    this.#log('broker dead-lettered event', {
      trigger: trigger.name,
      id: event.id,
      type: event.type,
      attempts,
      lastStatus: last.status,
      sinkStatus: record.sink?.status,
    });
  }

  #abandon(trigger: TriggerSpec, event: AnyEvent, duplicate: boolean, attempt: number): void {
    this.#record(
      {
        trigger: trigger.name,
        subscriber: trigger.subscriber.service,
        url: '',
        attempt,
        duplicate,
        event,
        status: undefined,
        outcome: 'abandoned',
      },
      undefined,
    );
  }

  #record(
    r: Omit<DeliveryRecord, 'seq' | 'at' | 'reply' | 'error'> & { outcome: DeliveryOutcome },
    replyEvent: AnyEvent | undefined,
    error?: string,
  ): void {
    const rec: DeliveryRecord = { ...r, seq: ++this.#seq, at: this.#now() };
    if (replyEvent) rec.reply = replyEvent;
    if (error !== undefined) rec.error = error;
    this.deliveries.push(rec);
    this.#log('broker delivery attempt', {
      trigger: r.trigger,
      id: r.event.id,
      type: r.event.type,
      attempt: r.attempt,
      status: r.status,
      outcome: r.outcome,
      duplicate: r.duplicate,
      ...(error !== undefined ? { error } : {}),
    });
  }

  #replicas(d: Destination): number {
    return this.#subscribers.get(d.service)?.length ?? 0;
  }

  #pick(d: Destination): string | undefined {
    const urls = this.#subscribers.get(d.service) ?? [];
    if (urls.length === 0) return undefined;
    if (this.#opts.replicaPick === 'random') return urls[rngInt(this.#rng, 0, urls.length - 1)];
    const i = this.#roundRobin.get(d.service) ?? 0;
    this.#roundRobin.set(d.service, i + 1);
    return urls[i % urls.length];
  }

  #now(): number {
    return this.#opts.clock ? this.#opts.clock.now() : Date.now();
  }

  #log(msg: string, fields: Record<string, unknown>): void {
    this.#opts.log?.(msg, { broker: `${this.#opts.namespace}/${this.#opts.name}`, ...fields });
  }
}

function reply(res: ServerResponse, status: number, message: string): void {
  res.statusCode = status;
  if (message) {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ error: message }));
  } else {
    res.end();
  }
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error('request body too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
