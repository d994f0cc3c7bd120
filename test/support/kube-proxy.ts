// A programmable HTTP proxy in front of the test API server, for fault injection, API-call
// counting and "which verbs does this function really use" checks.
//
// Clients talk plain HTTP to 127.0.0.1; the proxy forwards over HTTPS. A request that carries
// its own credentials (an Authorization header, e.g. a ServiceAccount token: see kubeConfig's
// `token`) is forwarded with them and without any client certificate, so the API server
// authenticates and authorizes that identity (RBAC); any other request is sent with the upstream
// kubeconfig's credentials (the admin's client certificate). Every request is logged, parsed into Kubernetes terms
// (verb, group, version, resource, subresource, namespace, name) and tagged with the client
// that sent it: the `x-swr-client` header, else a `/_tag/<tag>` prefix on the server URL (see
// kubeConfig(tag)), else the proxy's default tag. Watches stream through.
//
// With no fault, no storm and a client that brings no credentials, it is what `kubectl proxy`
// is: a credential-adding forwarder on 127.0.0.1, whose credential-less kubeconfig
// (proxyKubeConfig, writeKubeconfig) `npm start -- --kubeconfig` runs against (`port` picks its
// address ahead of its start).

import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import {
  apfRejectedStatus,
  etcdTimeoutStatus,
  watchExpiredEvent,
  type StormDecision,
  type StormProfile,
} from './storm.js';

export type KubeVerb =
  'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

/** A request in Kubernetes terms. Absent parts are ''. Non-resource paths have resource ''. */
export interface ApiRequestInfo {
  verb: KubeVerb;
  group: string;
  version: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
}

export type FaultKind = 'status' | 'reset' | 'timeout' | 'slow';

export interface ProxyCall extends ApiRequestInfo {
  /** 1-based order of arrival. */
  seq: number;
  method: string;
  /** Path and query as forwarded (tag prefix removed). */
  path: string;
  clientTag: string;
  /** The HTTP status the client received; undefined while pending or when the call was cut. */
  status?: number;
  /** The status the API server answered, when the request reached it. */
  upstreamStatus?: number;
  /** The fault applied to this call, if any. */
  fault?: FaultKind;
  /** What the storm profile did to this call, if anything (see setStorm). */
  storm?: StormDecision['kind'];
  /** Arrival time on the proxy's clock (the system's clock when given, else the wall clock). */
  at: number;
  /** Arrival time on the wall clock (performance.now()). */
  wallAt: number;
  /**
   * A write's outcome once its answer ended: the object the API server stored (from the answer,
   * also when a fault cut the answer off), or null when nothing was stored or it cannot be told.
   * Undefined while the write is pending. Lets the harness wait for exactly these versions on its
   * watches instead of listing the world.
   */
  written?: WrittenObject | null;
}

export interface WrittenObject {
  namespace: string;
  name: string;
  resourceVersion: string;
  /** An answer to a delete without a deletionTimestamp: the object is gone. */
  gone: boolean;
}

const WRITE_VERBS_RECORDED = new Set<KubeVerb>(['create', 'update', 'patch', 'delete']);

/** Every given field must match. `subresource: ''` matches the main resource only. */
export interface CallMatch {
  verb?: KubeVerb | KubeVerb[];
  group?: string;
  resource?: string;
  subresource?: string;
  namespace?: string;
  name?: string;
  clientTag?: string;
  /** Any further condition (e.g. "no RBAC rule of this client allows it"). */
  where?: (call: ApiRequestInfo & { clientTag: string }) => boolean;
}

/**
 * `before` (default): the request never reaches the API server.
 * `after`: it is forwarded and applied, then the client gets the fault instead of the answer.
 */
export type FaultPhase = 'before' | 'after';

interface FaultCommon {
  match?: CallMatch;
  /** How many matching calls to hit; unlimited when absent. */
  times?: number;
}

export type FaultRule = FaultCommon &
  /**
   * Answers `status`; with `retryAfterSeconds`, a Retry-After header too (API Priority and
   * Fairness sends 1 with its 429s: the storm's profile does, test/support/storm.ts).
   */
  (
    | { kind: 'status'; status: number; phase?: FaultPhase; retryAfterSeconds?: number }
    | { kind: 'reset'; phase?: FaultPhase }
    /** Holds the call without an answer for delayMs (default: until the client or proxy gives up), then cuts it. */
    | { kind: 'timeout'; delayMs?: number; phase?: FaultPhase }
    /** Waits delayMs, then forwards normally. */
    | { kind: 'slow'; delayMs: number }
  );

export interface FaultHandle {
  /** How many calls this rule has hit so far. */
  readonly applied: number;
  remove(): void;
}

export interface KubeProxyOptions {
  /** Tag for calls that carry neither the header nor a path tag. Default 'default'. */
  tag?: string;
  /** The clock calls are stamped with and the storm's window runs on (default: the wall clock). */
  clock?: { now(): number };
  /** The port on 127.0.0.1 to listen on (default: any free one). */
  port?: number;
}

/**
 * A clock a delayed request can wait on (the system's virtual clock): the request is held until
 * the clock reaches its moment, and counts in `heldOnClock` meanwhile (docs/adr/0040).
 */
export interface HoldClock {
  now(): number;
  setTimer(at: number, fn: () => void): number;
  cancel(id: number): boolean;
}

export const CLIENT_TAG_HEADER = 'x-swr-client';
/**
 * Calls held on a clock are released at whole virtual seconds (the delay rounded to the nearest
 * one): all calls due at one moment go on together, at one clock step (docs/adr/0040).
 */
export const HOLD_GRANULARITY_MS = 1000;

interface Held {
  readonly call: ProxyCall;
  release(): void;
  drop(): void;
}
const TAG_PREFIX = '/_tag/';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'host',
  CLIENT_TAG_HEADER,
]);

const STATUS_REASONS: Record<number, string> = {
  400: 'BadRequest',
  404: 'NotFound',
  409: 'Conflict',
  410: 'Expired',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

interface ActiveFault {
  rule: FaultRule;
  applied: number;
}

interface Upstream {
  url: URL;
  /** With the upstream kubeconfig's client certificate. */
  agent: https.Agent;
  /** Server verification only: for requests that bring their own Authorization. */
  bearerAgent: https.Agent;
  headers: http.OutgoingHttpHeaders;
}

export class KubeProxy {
  /** Every call seen since start (or the last clearCalls), in arrival order. */
  readonly calls: ProxyCall[] = [];

  private readonly defaultTag: string;
  private readonly faults: ActiveFault[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private server: http.Server | undefined;
  private upstream: Upstream | undefined;
  private seq = 0;
  private readonly clock: { now(): number };
  private readonly port: number;
  private storm: StormProfile | undefined;
  private holdClock: HoldClock | undefined;
  /** Held calls, and one clock timer per release moment (see HOLD_GRANULARITY_MS). */
  private readonly holds = new Set<Held>();
  private readonly holdMoments = new Map<number, { timer: number; held: Set<Held> }>();
  private readonly inFlightCalls = new Set<ProxyCall>();
  /** Mid-stream closes of storm watches waiting on the hold clock (cancelled on stop). */
  private readonly watchEnds = new Set<number>();
  /** Watches streaming right now, each with how to end it at a moment (setStorm's closes). */
  private readonly openWatches = new Map<ProxyCall, (closeAfterMs: number) => void>();

  constructor(
    private readonly target: k8s.KubeConfig,
    options: KubeProxyOptions = {},
  ) {
    this.defaultTag = options.tag ?? 'default';
    this.clock = options.clock ?? { now: () => Date.now() };
    this.port = options.port ?? 0;
  }

  /**
   * Puts the storm in front of every call that no fault rule took (rules win), or removes it
   * (undefined). With `holdOn`, a delayed call waits on that clock instead of real time.
   */
  setStorm(storm: StormProfile | undefined, opts: { holdOn?: HoldClock } = {}): void {
    this.storm = storm;
    this.holdClock = opts.holdOn;
    if (storm === undefined) return;
    // Watches opened before the storm (the adapters' from the install on) meet its closes too.
    const now = this.clock.now();
    for (const [call, endIn] of this.openWatches) {
      const closeAfterMs = storm.closeOpenWatch(call, now);
      if (closeAfterMs !== undefined) endIn(closeAfterMs);
    }
  }

  /** Answers every call held on the hold clock 503 and cancels its timer (before a shutdown). */
  dropHeld(): void {
    for (const timer of this.watchEnds) this.holdClock?.cancel(timer);
    this.watchEnds.clear();
    for (const { timer } of this.holdMoments.values()) this.holdClock?.cancel(timer);
    this.holdMoments.clear();
    const held = [...this.holds];
    this.holds.clear();
    for (const h of held) h.drop();
  }

  /** Calls the storm holds on the hold clock right now. */
  get heldOnClock(): number {
    return this.holds.size;
  }

  /** The calls the storm holds on the hold clock right now (lists and watch connects included). */
  heldCalls(): ProxyCall[] {
    return [...this.holds].map((h) => h.call);
  }

  /** Non-watch calls forwarded to the API server whose answer has not ended yet. */
  get upstreamInFlight(): number {
    return this.inFlightCalls.size;
  }

  async start(): Promise<void> {
    if (this.server !== undefined) throw new Error('kube proxy already started');
    const cluster = this.target.getCurrentCluster();
    if (cluster === null) throw new Error('kube proxy: upstream kubeconfig has no current cluster');
    const tls: https.RequestOptions = {};
    await this.target.applyToHTTPSOptions(tls);
    const verify = definedOf(tls, ['ca', 'rejectUnauthorized']);
    this.upstream = {
      url: new URL(cluster.server),
      bearerAgent: new https.Agent({ keepAlive: true, ...verify }),
      agent: new https.Agent({ keepAlive: true, ...verify, ...definedOf(tls, ['cert', 'key']) }),
      // e.g. a bearer token from the upstream kubeconfig (none for the test API server).
      headers: definedHeaders(tls.headers),
    };
    const server = http.createServer((req, res) => this.handle(req, res));
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((done, fail) => {
      server.once('error', fail);
      server.listen(this.port, '127.0.0.1', () => done());
    });
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    this.server = undefined;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.dropHeld();
    const closed = new Promise<void>((done) => server.close(() => done()));
    for (const socket of this.sockets) socket.destroy();
    this.upstream?.agent.destroy();
    this.upstream?.bearerAgent.destroy();
    await closed;
  }

  /** http://127.0.0.1:PORT */
  get url(): string {
    const address = this.server?.address();
    if (address === null || address === undefined || typeof address === 'string') {
      throw new Error('kube proxy not started');
    }
    return `http://127.0.0.1:${address.port}`;
  }

  /**
   * A KubeConfig pointing at the proxy; with a tag, every call it makes is tagged so. Without a
   * token its calls reach the API server as the upstream kubeconfig's user (the admin); with one,
   * as the token's identity (a ServiceAccount, under RBAC).
   */
  kubeConfig(tag?: string, auth: { token?: string } = {}): k8s.KubeConfig {
    return proxyKubeConfig(this.url, tag, auth);
  }

  /** Writes kubeConfig(tag, auth) to path (for processes that read a kubeconfig file). */
  async writeKubeconfig(path: string, tag?: string, auth: { token?: string } = {}): Promise<void> {
    await writeProxyKubeconfig(path, this.url, tag, auth);
  }

  callsMatching(match: CallMatch = {}): ProxyCall[] {
    return this.calls.filter((call) => matches(call, match));
  }

  count(match: CallMatch = {}): number {
    return this.callsMatching(match).length;
  }

  /** Counts by "verb resource[/subresource]", e.g. { "patch artifactgenerators/status": 2 }. */
  counters(match: CallMatch = {}): Record<string, number> {
    const out: Record<string, number> = {};
    for (const call of this.callsMatching(match)) {
      const key = `${call.verb} ${call.resource}${call.subresource === '' ? '' : `/${call.subresource}`}`;
      out[key] = (out[key] ?? 0) + 1;
    }
    return out;
  }

  clearCalls(): void {
    this.calls.length = 0;
  }

  addFault(rule: FaultRule): FaultHandle {
    if (rule.times !== undefined && !(Number.isInteger(rule.times) && rule.times > 0)) {
      throw new Error(`kube proxy: fault times must be a positive integer, got ${rule.times}`);
    }
    const active: ActiveFault = { rule, applied: 0 };
    this.faults.push(active);
    const faults = this.faults;
    return {
      get applied() {
        return active.applied;
      },
      remove() {
        const at = faults.indexOf(active);
        if (at >= 0) faults.splice(at, 1);
      },
    };
  }

  clearFaults(): void {
    this.faults.length = 0;
  }

  // ------------------------------------------------------------------ request handling

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const { tag: pathTag, path } = splitTag(req.url ?? '/');
    const headerTag = req.headers[CLIENT_TAG_HEADER];
    const call: ProxyCall = {
      seq: ++this.seq,
      method: req.method ?? 'GET',
      path,
      clientTag:
        (typeof headerTag === 'string' ? headerTag : undefined) ?? pathTag ?? this.defaultTag,
      ...parseApiRequest(req.method ?? 'GET', path),
      at: this.clock.now(),
      wallAt: performance.now(),
    };
    this.calls.push(call);
    const rule = this.takeFault(call);
    if (rule === undefined) {
      const decision = this.storm?.decide(call, call.at);
      if (decision === undefined) this.forward(req, res, call);
      else this.applyStorm(decision, req, res, call);
      return;
    }
    call.fault = rule.kind;
    if (rule.kind === 'slow') {
      this.later(rule.delayMs, () => this.forward(req, res, call));
      return;
    }
    if (rule.phase === 'after') {
      this.forward(req, res, call, () => this.inject(rule, req, res, call));
      return;
    }
    req.resume();
    this.inject(rule, req, res, call);
  }

  private applyStorm(
    decision: StormDecision,
    req: http.IncomingMessage,
    res: http.ServerResponse,
    call: ProxyCall,
  ): void {
    call.storm = decision.kind;
    switch (decision.kind) {
      case 'error500':
        req.resume();
        respondBody(res, call, 500, etcdTimeoutStatus(), {});
        return;
      case 'tooMany':
        req.resume();
        respondBody(res, call, 429, apfRejectedStatus(decision.retryAfterSeconds), {
          'retry-after': String(decision.retryAfterSeconds),
        });
        return;
      case 'watchGone': {
        req.resume();
        const rv = new URL(call.path, 'http://proxy.invalid').searchParams.get('resourceVersion');
        call.status = 200;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`${JSON.stringify(watchExpiredEvent(rv ?? ''))}\n`);
        return;
      }
      case 'delayed':
        this.delay(decision.delayMs, req, res, call);
        return;
      case 'watchHeld':
        this.delay(decision.delayMs, req, res, call, decision.closeAfterMs);
        return;
      case 'watchClosed':
        this.forward(req, res, call, undefined, decision.closeAfterMs);
        return;
    }
  }

  /** Holds a call `delayMs` (on the hold clock when there is one), then forwards it. */
  private delay(
    delayMs: number,
    req: http.IncomingMessage,
    res: http.ServerResponse,
    call: ProxyCall,
    closeAfterMs?: number,
  ): void {
    const clock = this.holdClock;
    if (clock === undefined) {
      this.later(delayMs, () => this.forward(req, res, call, undefined, closeAfterMs));
      return;
    }
    // Paused: the body waits in the socket until the request is forwarded.
    req.pause();
    const at = Math.round((clock.now() + delayMs) / HOLD_GRANULARITY_MS) * HOLD_GRANULARITY_MS;
    const held: Held = {
      call,
      release: () => {
        res.off('close', gone);
        this.forward(req, res, call, undefined, closeAfterMs);
      },
      drop: () => {
        res.off('close', gone);
        if (!res.headersSent) respondStatus(res, call, 503, 'kube proxy stopped');
      },
    };
    // A client that gives up while its request is held (its own timeout) ends the hold.
    const gone = (): void => this.unhold(held, at);
    res.once('close', gone);
    this.hold(clock, held, at);
  }

  /**
   * Ends a forwarded watch's stream cleanly at `fromMs + closeAfterMs` (as kube-apiserver ends
   * one), on the hold clock when there is one.
   */
  private endWatchLater(
    fromMs: number,
    res: http.ServerResponse,
    upstreamReq: http.ClientRequest,
    upstreamRes: http.IncomingMessage,
    closeAfterMs: number,
  ): void {
    const end = (): void => {
      upstreamRes.unpipe(res);
      if (!res.writableEnded) res.end();
      upstreamReq.destroy();
    };
    const clock = this.holdClock;
    if (clock === undefined) {
      const timer = setTimeout(
        () => {
          this.timers.delete(timer);
          end();
        },
        Math.max(0, fromMs + closeAfterMs - this.clock.now()),
      );
      this.timers.add(timer);
      res.once('close', () => {
        clearTimeout(timer);
        this.timers.delete(timer);
      });
      return;
    }
    const at = Math.round((fromMs + closeAfterMs) / HOLD_GRANULARITY_MS) * HOLD_GRANULARITY_MS;
    const timer = clock.setTimer(Math.max(at, clock.now()), () => {
      this.watchEnds.delete(timer);
      end();
    });
    this.watchEnds.add(timer);
    res.once('close', () => {
      if (this.watchEnds.delete(timer)) clock.cancel(timer);
    });
  }

  private hold(clock: HoldClock, held: Held, at: number): void {
    this.holds.add(held);
    let moment = this.holdMoments.get(at);
    if (moment === undefined) {
      const timer = clock.setTimer(at, () => {
        const due = this.holdMoments.get(at);
        this.holdMoments.delete(at);
        for (const h of due?.held ?? []) {
          this.holds.delete(h);
          h.release();
        }
      });
      moment = { timer, held: new Set() };
      this.holdMoments.set(at, moment);
    }
    moment.held.add(held);
  }

  private unhold(held: Held, at: number): void {
    this.holds.delete(held);
    const moment = this.holdMoments.get(at);
    if (moment === undefined) return;
    moment.held.delete(held);
    if (moment.held.size === 0) {
      this.holdClock?.cancel(moment.timer);
      this.holdMoments.delete(at);
    }
  }

  private takeFault(call: ProxyCall): FaultRule | undefined {
    const at = this.faults.findIndex((f) => matches(call, f.rule.match ?? {}));
    const active = this.faults[at];
    if (active === undefined) return undefined;
    active.applied += 1;
    if (active.rule.times !== undefined && active.applied >= active.rule.times) {
      this.faults.splice(at, 1);
    }
    return active.rule;
  }

  private inject(
    rule: Exclude<FaultRule, { kind: 'slow' }>,
    req: http.IncomingMessage,
    res: http.ServerResponse,
    call: ProxyCall,
  ): void {
    switch (rule.kind) {
      case 'status':
        respondStatus(res, call, rule.status, 'injected fault', rule.retryAfterSeconds);
        return;
      case 'reset':
        req.socket.destroy();
        return;
      case 'timeout':
        if (rule.delayMs !== undefined) this.later(rule.delayMs, () => req.socket.destroy());
        return;
    }
  }

  /**
   * Forwards to the API server; with `after`, the answer is drained and `after` runs instead;
   * with `closeAfterMs`, a watch's stream is ended that long after the call arrived.
   */
  private forward(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    call: ProxyCall,
    after?: () => void,
    closeAfterMs?: number,
  ): void {
    const upstream = this.upstream;
    if (upstream === undefined || this.server === undefined) {
      respondStatus(res, call, 503, 'kube proxy stopped');
      return;
    }
    // The client left while the call waited (a delay): nothing to forward.
    if (res.destroyed || req.destroyed) return;
    // The client's own credentials win; then no client certificate may be presented, or the
    // API server would authenticate the admin certificate first and never look at the token.
    const ownCredentials = req.headers.authorization !== undefined;
    const headers: http.OutgoingHttpHeaders = ownCredentials ? {} : { ...upstream.headers };
    for (const [key, value] of Object.entries(req.headers)) {
      if (!HOP_BY_HOP.has(key) && value !== undefined) headers[key] = value;
    }
    if (call.verb !== 'watch') this.inFlightCalls.add(call);
    const settled = (): void => {
      this.inFlightCalls.delete(call);
    };
    res.once('close', settled);
    const upstreamReq = https.request({
      protocol: upstream.url.protocol,
      hostname: upstream.url.hostname,
      port: upstream.url.port,
      method: call.method,
      path: call.path,
      headers,
      agent: ownCredentials ? upstream.bearerAgent : upstream.agent,
    });
    upstreamReq.on('response', (upstreamRes) => {
      call.upstreamStatus = upstreamRes.statusCode ?? 502;
      upstreamRes.once('end', settled);
      if (WRITE_VERBS_RECORDED.has(call.verb)) recordWritten(call, upstreamRes);
      if (after !== undefined) {
        upstreamRes.resume();
        upstreamRes.once('end', after);
        return;
      }
      call.status = call.upstreamStatus;
      const out: http.OutgoingHttpHeaders = {};
      for (const [key, value] of Object.entries(upstreamRes.headers)) {
        if (!HOP_BY_HOP.has(key) && value !== undefined) out[key] = value;
      }
      res.writeHead(call.status, out);
      res.flushHeaders();
      upstreamRes.pipe(res);
      if (call.verb === 'watch' && call.status === 200) {
        if (closeAfterMs !== undefined) {
          this.endWatchLater(call.at, res, upstreamReq, upstreamRes, closeAfterMs);
        } else {
          this.openWatches.set(call, (ms) =>
            this.endWatchLater(this.clock.now(), res, upstreamReq, upstreamRes, ms),
          );
          res.once('close', () => this.openWatches.delete(call));
        }
      }
    });
    upstreamReq.on('error', (err) => {
      settled();
      call.written ??= null;
      if (res.headersSent) res.destroy();
      else respondStatus(res, call, 502, `kube proxy upstream error: ${err.message}`);
    });
    res.once('close', () => {
      if (!res.writableFinished) upstreamReq.destroy();
    });
    req.pipe(upstreamReq);
  }

  private later(delayMs: number, run: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, delayMs);
    this.timers.add(timer);
  }
}

/**
 * A KubeConfig for a proxy at `url` (http://127.0.0.1:PORT), also before it listens (see
 * KubeProxy.kubeConfig): without a token its user holds no credential at all.
 */
export function proxyKubeConfig(
  url: string,
  tag?: string,
  auth: { token?: string } = {},
): k8s.KubeConfig {
  const server = tag === undefined ? url : `${url}${TAG_PREFIX}${encodeURIComponent(tag)}`;
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    // client-node refuses a plain http:// server unless TLS verification is off (there is no TLS).
    clusters: [{ name: 'kube-proxy', server, skipTLSVerify: true }],
    users: [{ name: 'kube-proxy', ...(auth.token === undefined ? {} : { token: auth.token }) }],
    contexts: [{ name: 'kube-proxy', cluster: 'kube-proxy', user: 'kube-proxy' }],
    currentContext: 'kube-proxy',
  });
  return kc;
}

/** Writes proxyKubeConfig(url, tag, auth) to path (for processes that read a kubeconfig file). */
export async function writeProxyKubeconfig(
  path: string,
  url: string,
  tag?: string,
  auth: { token?: string } = {},
): Promise<void> {
  await writeFile(path, proxyKubeConfig(url, tag, auth).exportConfig(), { mode: 0o600 });
}

/** Starts a proxy in front of the cluster `target` points at. */
export async function startKubeProxy(
  target: k8s.KubeConfig,
  options: KubeProxyOptions = {},
): Promise<KubeProxy> {
  const proxy = new KubeProxy(target, options);
  await proxy.start();
  return proxy;
}

// -------------------------------------------------------------------- parsing and matching

function splitTag(rawPath: string): { tag?: string; path: string } {
  if (!rawPath.startsWith(TAG_PREFIX)) return { path: rawPath };
  const rest = rawPath.slice(TAG_PREFIX.length);
  const slash = rest.indexOf('/');
  const tag = decodeURIComponent(slash < 0 ? rest : rest.slice(0, slash));
  return { tag, path: slash < 0 ? '/' : rest.slice(slash) };
}

/** Parses a request line into Kubernetes terms (as the API server's RequestInfo does). */
export function parseApiRequest(method: string, pathWithQuery: string): ApiRequestInfo {
  const url = new URL(pathWithQuery, 'http://proxy.invalid');
  const parts = url.pathname.split('/').filter((p) => p !== '');
  const info: ApiRequestInfo = {
    verb: 'get',
    group: '',
    version: '',
    resource: '',
    subresource: '',
    namespace: '',
    name: '',
  };
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 2) {
    info.version = parts[1] ?? '';
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 3) {
    info.group = parts[1] ?? '';
    info.version = parts[2] ?? '';
    rest = parts.slice(3);
  } else {
    info.verb = verbFor(method, false, false);
    return info;
  }
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    info.namespace = rest[1] ?? '';
    rest = rest.slice(2);
  }
  info.resource = rest[0] ?? '';
  info.name = rest[1] ?? '';
  info.subresource = rest.slice(2).join('/');
  const watch = url.searchParams.get('watch');
  info.verb = verbFor(method, info.name !== '', watch === 'true' || watch === '1');
  return info;
}

function verbFor(method: string, named: boolean, watch: boolean): KubeVerb {
  switch (method.toUpperCase()) {
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return named ? 'delete' : 'deletecollection';
    default:
      if (watch) return 'watch';
      return named ? 'get' : 'list';
  }
}

export function matches(call: ApiRequestInfo & { clientTag: string }, match: CallMatch): boolean {
  if (match.verb !== undefined) {
    const verbs = Array.isArray(match.verb) ? match.verb : [match.verb];
    if (!verbs.includes(call.verb)) return false;
  }
  return (
    (match.group === undefined || match.group === call.group) &&
    (match.resource === undefined || match.resource === call.resource) &&
    (match.subresource === undefined || match.subresource === call.subresource) &&
    (match.namespace === undefined || match.namespace === call.namespace) &&
    (match.name === undefined || match.name === call.name) &&
    (match.clientTag === undefined || match.clientTag === call.clientTag) &&
    (match.where === undefined || match.where(call))
  );
}

/** Reads the stored object's name and version off a write's answer (it is piped on as well). */
function recordWritten(call: ProxyCall, upstreamRes: http.IncomingMessage): void {
  const chunks: Buffer[] = [];
  upstreamRes.on('data', (c: Buffer) => chunks.push(c));
  const done = (): void => {
    call.written = null;
    const code = call.upstreamStatus ?? 0;
    if (code < 200 || code > 299) return;
    try {
      const o = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        metadata?: {
          name?: string;
          namespace?: string;
          resourceVersion?: string;
          deletionTimestamp?: string;
        };
      };
      const m = o.metadata;
      if (typeof m?.name !== 'string' || typeof m.resourceVersion !== 'string') return;
      call.written = {
        namespace: m.namespace ?? '',
        name: m.name,
        resourceVersion: m.resourceVersion,
        gone: call.verb === 'delete' && m.deletionTimestamp === undefined,
      };
    } catch {
      // Not an object: nothing to wait for.
    }
  };
  upstreamRes.once('end', done);
  upstreamRes.once('close', () => {
    if (call.written === undefined) call.written = null;
  });
}

/** The named options of `o` that are set (exactOptionalPropertyTypes forbids passing undefined). */
function definedOf<K extends keyof https.RequestOptions>(
  o: https.RequestOptions,
  keys: readonly K[],
): Partial<Pick<https.RequestOptions, K>> {
  const out: Partial<Pick<https.RequestOptions, K>> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

function definedHeaders(headers: https.RequestOptions['headers']): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  if (headers === undefined || Array.isArray(headers)) return out;
  for (const [key, value] of Object.entries(headers)) {
    if (value !== undefined) out[key] = value;
  }
  return out;
}

function respondBody(
  res: http.ServerResponse,
  call: ProxyCall,
  code: number,
  status: Record<string, unknown>,
  extraHeaders: http.OutgoingHttpHeaders,
): void {
  call.status = code;
  const body = JSON.stringify(status);
  res.writeHead(code, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...extraHeaders,
  });
  res.end(body);
}

function respondStatus(
  res: http.ServerResponse,
  call: ProxyCall,
  code: number,
  message: string,
  retryAfterSeconds?: number,
): void {
  call.status = code;
  const body = JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `${message}: ${call.method} ${call.path}`,
    reason: STATUS_REASONS[code] ?? 'InternalError',
    details: { name: call.name, group: call.group, kind: call.resource },
    code,
  });
  const headers: http.OutgoingHttpHeaders = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  };
  if (retryAfterSeconds !== undefined) headers['retry-after'] = String(retryAfterSeconds);
  res.writeHead(code, headers);
  res.end(body);
}
