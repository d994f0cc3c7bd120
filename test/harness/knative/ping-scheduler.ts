// The Knative PingSource adapter on a virtual clock. It takes PingSources from the test API server
// (list + watch, all namespaces or one) and from static config (e.g. `resync` from knative/), and
// on every tick POSTs dev.knative.sources.ping (source /apis/v1/namespaces/<ns>/pingsources/<name>,
// data = spec.data with datacontenttype spec.contentType, or spec.dataBase64 as binary data) to
// the sink, in binary mode, once (no retry), after a seeded 0-500 ms jitter.
//
// Faithful quirks:
// - A change (create, spec patch, delete) takes effect only when the adapter picks it up, a lag
//   after the watch delivers it (default 0-1 s of virtual time). Until then the old schedule runs.
// - At pick-up the next tick is computed from that moment: a one-moment schedule whose moment
//   passed before the pick-up fires only next year.
// - The next tick is computed from the time the tick woke the adapter, so ticks missed by a long
//   clock jump are skipped, not replayed.
// - An invalid schedule (which Knative's webhook would have refused) is never scheduled; it is
//   recorded in `rejected`.

import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { CloudEvent } from 'cloudevents';
import type { KubeConfig } from '@kubernetes/client-node';
import { PING } from '../../../shared/core/objects/cloudevent-types.js';
import { PING_PLURAL } from '../../../shared/core/objects/types.js';
import type { PingSource } from '../../../shared/kube/port.js';
import { cancelTimer } from './clock.js';
import type { EmuClock } from './clock.js';
import { postBinary } from './cloudevent-http.js';
import { sourceBearer, type OidcTokenSource } from './oidc-tokens.js';
import type { AnyEvent } from './cloudevent-http.js';
import { CronError, nextFire, parseSchedule } from './cron.js';
import type { CronSchedule } from './cron.js';
import { ListWatch, listCatchUp } from './list-watch.js';
import type { CatchUp, KubeObject } from './list-watch.js';
import { PendingWork } from './pending.js';
import { rngInt, seededRng } from '../rng.js';
import type { Rng } from '../rng.js';

export interface PingSchedulerOptions {
  clock: EmuClock;
  /** The sink (Broker ingress) URL, or a getter read at each send. */
  sinkUrl: string | (() => string);
  /** Watch PingSources in this API server; static sources only when absent. */
  kubeConfig?: KubeConfig;
  /** Watch one namespace; all namespaces when absent. */
  namespace?: string;
  /** PingSources the adapter knows from the start (a watched object with the same name wins). */
  staticSources?: PingSource[];
  /** Virtual ms between a change arriving and the adapter applying it (default 0-1000). */
  pickupLagMs?: number | { min: number; max: number };
  /** Seed for jitter and lag (default 1). */
  seed?: number;
  log?: (msg: string, fields: Record<string, unknown>) => void;
  /** OIDC on (docs/adr/0056): each tick carries a token of its PingSource's OIDC identity. */
  oidc?: { tokens: OidcTokenSource; audience: string };
  /** The client of the harness's catch-up lists (default: the adapter's own). */
  catchUpKubeConfig?: KubeConfig;
}

export interface PingFireRecord {
  namespace: string;
  name: string;
  /** The cron moment of this tick (virtual epoch ms). */
  scheduledAt: number;
  /** When the event was sent (virtual epoch ms): scheduledAt + jitter. */
  firedAt: number;
  event: AnyEvent;
  /** The sink's HTTP status; undefined for a transport error. */
  status: number | undefined;
  error?: string;
}

export interface PingRejection {
  namespace: string;
  name: string;
  schedule: string;
  reason: string;
  at: number;
}

export interface ScheduledPing {
  namespace: string;
  name: string;
  schedule: string;
  timezone: string;
  /** Next tick (virtual epoch ms), null when it cannot fire within five years. */
  next: number | null;
}

interface Entry {
  key: string;
  namespace: string;
  name: string;
  source: PingSource;
  schedule: CronSchedule;
  timezone: string;
  signature: string;
  version: number;
  timer: unknown;
  next: number | null;
}

const PING_RESOURCE = { group: 'sources.knative.dev', version: 'v1', plural: PING_PLURAL };
/** Maximum jitter per tick, virtual ms. */
const JITTER_MAX_MS = 500;

/** As Knative's PingSourceSource: the event's `source` names the PingSource's namespace. */
export function pingEventSource(namespace: string, name: string): string {
  return `/apis/v1/namespaces/${namespace}/pingsources/${name}`;
}

function keyOf(s: PingSource | KubeObject): string {
  return `${s.metadata?.namespace ?? ''}/${s.metadata?.name ?? ''}`;
}

/** What the adapter cares about; metadata/status-only changes do not reschedule. */
function signatureOf(s: PingSource): string {
  const spec = (s.spec ?? {}) as Record<string, unknown>;
  return JSON.stringify([
    spec.schedule,
    spec.timezone,
    spec.contentType,
    spec.data,
    spec.dataBase64,
    spec.sink,
    spec.ceOverrides,
  ]);
}

export class PingScheduler {
  readonly fires: PingFireRecord[] = [];
  readonly rejected: PingRejection[] = [];
  readonly #opts: PingSchedulerOptions;
  readonly #clock: EmuClock;
  readonly #rng: Rng;
  readonly #entries = new Map<string, Entry>();
  /** The latest state the watch delivered per key (null: deleted), awaiting pick-up. */
  readonly #desired = new Map<string, PingSource | null>();
  readonly #pickupTimers = new Map<string, unknown>();
  /** Ticks waiting out their jitter (cancelled by stop()). */
  readonly #jitterTimers = new Map<object, unknown>();
  readonly #pending = new PendingWork();
  readonly #abort = new AbortController();
  readonly #watch: ListWatch | undefined;
  #version = 0;
  #running = false;
  #listedOnce = false;

  constructor(opts: PingSchedulerOptions) {
    this.#opts = opts;
    setMaxListeners(0, this.#abort.signal);
    this.#clock = opts.clock;
    this.#rng = seededRng(opts.seed ?? 1);
    this.#watch = opts.kubeConfig
      ? new ListWatch(
          opts.kubeConfig,
          opts.namespace ? { ...PING_RESOURCE, namespace: opts.namespace } : PING_RESOURCE,
          {
            onEvent: (type, obj) => this.#changed(obj as PingSource, type === 'DELETED'),
            onList: (items) => this.#listed(items as PingSource[]),
          },
          {
            ...(opts.log ? { log: opts.log } : {}),
            clock: opts.clock,
            seed: opts.seed ?? 1,
            ...(opts.catchUpKubeConfig ? { catchUpKubeConfig: opts.catchUpKubeConfig } : {}),
          },
        )
      : undefined;
  }

  /** Schedules the static sources, then lists (scheduling every PingSource found) and watches. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    for (const s of this.#opts.staticSources ?? []) this.#apply(keyOf(s), s);
    await this.#watch?.start();
  }

  async stop(): Promise<void> {
    this.#running = false;
    this.#abort.abort();
    await this.#watch?.stop();
    for (const e of this.#entries.values()) cancelTimer(this.#clock, e.timer);
    for (const t of this.#pickupTimers.values()) cancelTimer(this.#clock, t);
    for (const t of this.#jitterTimers.values()) cancelTimer(this.#clock, t);
    this.#jitterTimers.clear();
    this.#entries.clear();
    this.#pickupTimers.clear();
    await this.#pending.idle();
  }

  /** Resolves when no ping send is in flight. */
  idle(): Promise<void> {
    return this.#pending.idle();
  }

  /** Resolves once the watch has delivered every PingSource change visible in a fresh list. */
  async caughtUp(timeoutMs?: number, how: CatchUp = listCatchUp): Promise<boolean> {
    return this.#watch === undefined ? true : how(this.#watch, timeoutMs ?? 10_000);
  }

  /** The list-watch of PingSources, when it has one. */
  get listWatch(): ListWatch | undefined {
    return this.#watch;
  }

  /** Watch events received so far. */
  get received(): number {
    return this.#watch?.events ?? 0;
  }

  /** What the adapter has scheduled right now. */
  scheduled(): ScheduledPing[] {
    return [...this.#entries.values()].map((e) => ({
      namespace: e.namespace,
      name: e.name,
      schedule: e.schedule.expression,
      timezone: e.timezone,
      next: e.next,
    }));
  }

  /** Fires of one PingSource, in order. */
  firesOf(namespace: string, name: string): PingFireRecord[] {
    return this.fires.filter((f) => f.namespace === namespace && f.name === name);
  }

  // ---- changes --------------------------------------------------------------------------------

  #listed(items: PingSource[]): void {
    const initial = !this.#listedOnce;
    this.#listedOnce = true;
    const present = new Set(items.map(keyOf));
    for (const item of items) {
      if (initial) this.#apply(keyOf(item), item);
      else this.#changed(item, false);
    }
    if (initial) return;
    const statics = new Set((this.#opts.staticSources ?? []).map(keyOf));
    for (const key of this.#entries.keys()) {
      if (!present.has(key) && !statics.has(key)) this.#changedKey(key, null);
    }
  }

  #changed(obj: PingSource, deleted: boolean): void {
    this.#changedKey(keyOf(obj), deleted ? null : obj);
  }

  #changedKey(key: string, obj: PingSource | null): void {
    const current = this.#desired.has(key)
      ? this.#desired.get(key)
      : this.#entries.get(key)?.source;
    const same =
      (obj === null && (current === null || current === undefined)) ||
      (obj !== null && current && signatureOf(current) === signatureOf(obj));
    if (same) return;
    this.#desired.set(key, obj);
    if (this.#pickupTimers.has(key)) return; // the pending pick-up will read the latest state
    const lag = this.#lag();
    if (lag <= 0) return this.#pickup(key);
    this.#pickupTimers.set(
      key,
      this.#clock.setTimer(this.#clock.now() + lag, () => this.#pickup(key)),
    );
  }

  #pickup(key: string): void {
    this.#pickupTimers.delete(key);
    if (!this.#running || !this.#desired.has(key)) return;
    const obj = this.#desired.get(key) ?? null;
    this.#desired.delete(key);
    this.#apply(key, obj);
  }

  #lag(): number {
    const lag = this.#opts.pickupLagMs ?? { min: 0, max: 1000 };
    return typeof lag === 'number' ? lag : rngInt(this.#rng, lag.min, lag.max);
  }

  /** The adapter (re)installs or removes the cron entry for one PingSource, now. */
  #apply(key: string, obj: PingSource | null): void {
    const old = this.#entries.get(key);
    if (old) {
      cancelTimer(this.#clock, old.timer);
      this.#entries.delete(key);
    }
    if (obj === null) {
      this.#log('ping source removed', { key });
      return;
    }
    const namespace = obj.metadata?.namespace ?? '';
    const name = obj.metadata?.name ?? '';
    const expression = obj.spec?.schedule ?? '';
    const timezone = obj.spec?.timezone || 'UTC';
    let schedule: CronSchedule;
    try {
      schedule = parseSchedule(expression);
      nextFire(schedule, this.#clock.now(), timezone); // validates the time zone too
    } catch (e) {
      const reason = e instanceof CronError ? e.message : String(e);
      this.rejected.push({ namespace, name, schedule: expression, reason, at: this.#clock.now() });
      this.#log('ping source rejected', { key, schedule: expression, reason });
      return;
    }
    const entry: Entry = {
      key,
      namespace,
      name,
      source: obj,
      schedule,
      timezone,
      signature: signatureOf(obj),
      version: ++this.#version,
      timer: undefined,
      next: null,
    };
    this.#entries.set(key, entry);
    this.#arm(entry);
    this.#log('ping source scheduled', { key, schedule: expression, timezone, next: entry.next });
  }

  #arm(entry: Entry): void {
    const next = nextFire(entry.schedule, this.#clock.now(), entry.timezone);
    entry.next = next;
    entry.timer = undefined;
    if (next === null) return;
    const version = entry.version;
    entry.timer = this.#clock.setTimer(next, () => this.#wake(entry.key, version, next));
  }

  // ---- ticks ----------------------------------------------------------------------------------

  #wake(key: string, version: number, scheduledAt: number): Promise<void> | undefined {
    const entry = this.#entries.get(key);
    if (!this.#running || !entry || entry.version !== version) return undefined;
    if (this.#clock.now() < scheduledAt) {
      // Woken before the tick's moment (a clock that cannot hold a long delay): wait again, send
      // nothing. A tick is sent only once its moment has come.
      entry.timer = this.#clock.setTimer(scheduledAt, () => this.#wake(key, version, scheduledAt));
      return undefined;
    }
    const source = entry.source;
    this.#arm(entry);
    const jitter = rngInt(this.#rng, 0, JITTER_MAX_MS);
    const at = scheduledAt + jitter;
    if (at <= this.#clock.now()) return this.#fire(source, scheduledAt);
    const token = {};
    this.#jitterTimers.set(
      token,
      this.#clock.setTimer(at, () => {
        this.#jitterTimers.delete(token);
        return this.#fire(source, scheduledAt);
      }),
    );
    return undefined;
  }

  #fire(source: PingSource, scheduledAt: number): Promise<void> {
    return this.#pending.track(this.#send(source, scheduledAt));
  }

  async #send(source: PingSource, scheduledAt: number): Promise<void> {
    if (!this.#running) return;
    const namespace = source.metadata?.namespace ?? '';
    const name = source.metadata?.name ?? '';
    const event = makePingEvent(source, this.#clock.now());
    const firedAt = this.#clock.now();
    const sink =
      typeof this.#opts.sinkUrl === 'function' ? this.#opts.sinkUrl() : this.#opts.sinkUrl;
    const oidc = this.#opts.oidc;
    const out = await postBinary(sink, event, {
      timeoutMs: 10_000,
      signal: this.#abort.signal,
      ...(await sourceBearer(oidc && { ...oidc, name }, 'PingSource')),
    });
    const record: PingFireRecord = {
      namespace,
      name,
      scheduledAt,
      firedAt,
      event,
      status: out.status,
    };
    if (out.error !== undefined) record.error = out.error;
    this.fires.push(record);
    this.#log('ping fired', {
      namespace,
      name,
      scheduledAt: new Date(scheduledAt).toISOString(),
      firedAt: new Date(firedAt).toISOString(),
      status: out.status,
      ...(out.error !== undefined ? { error: out.error } : {}),
    });
  }

  #log(msg: string, fields: Record<string, unknown>): void {
    this.#opts.log?.(msg, fields);
  }
}

/** The CloudEvent a PingSource tick sends. */
export function makePingEvent(source: PingSource, nowMs: number): AnyEvent {
  const namespace = source.metadata?.namespace ?? '';
  const name = source.metadata?.name ?? '';
  const spec = (source.spec ?? {}) as Record<string, unknown>;
  const attrs: Record<string, unknown> = {
    specversion: '1.0',
    id: randomUUID(),
    type: PING,
    source: pingEventSource(namespace, name),
    time: new Date(nowMs).toISOString(),
  };
  // As the PingSource adapter does: every ceOverrides extension becomes an attribute of the event.
  const overrides = spec.ceOverrides as { extensions?: Record<string, unknown> } | undefined;
  for (const [key, value] of Object.entries(overrides?.extensions ?? {})) {
    if (typeof value === 'string' && !(key in attrs)) attrs[key] = value;
  }
  if (typeof spec.dataBase64 === 'string' && spec.dataBase64 !== '') {
    attrs.data = new Uint8Array(Buffer.from(spec.dataBase64, 'base64'));
    if (typeof spec.contentType === 'string') attrs.datacontenttype = spec.contentType;
  } else if (typeof spec.data === 'string' && spec.data !== '') {
    attrs.data = spec.data;
    if (typeof spec.contentType === 'string') attrs.datacontenttype = spec.contentType;
  }
  return new CloudEvent<unknown>(attrs);
}
