// One HTTP request to the API server, with the kubeconfig's credentials and TLS settings, a hard
// per-request timeout combined with the delivery's signal (shared/runtime/delivery.ts: no request
// starts once the delivery has ended, and one in flight is cut when it ends), and no exceptions:
// the outcome is a response or a RequestFailure (plain data, free of headers and credentials) for
// errors-map.ts to classify.
//
// client-node's KubeConfig.applyToHTTPSOptions supplies the headers (bearer token, refreshed by its
// authenticators) and the TLS material on every request. Sockets go through one keep-alive agent per
// TLS identity, rebuilt when the material changes (a rotated client certificate).
//
// The kubeconfig may be given as a loader (KubeConfigSource): it runs at the first request and
// its answer is kept, so a function that never calls the API server never loads client-node (the
// kubeconfig's reader). Every client of a function shares that one loader.

import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { deliverySignal } from '../runtime/delivery.js';
import type { RequestFailure } from './errors-map.js';

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** API path without the server's own path prefix, e.g. /apis/g/v1/namespaces/ns/things/x. */
  path: string;
  query?: Record<string, string | undefined>;
  /** Serialised as JSON. */
  body?: unknown;
  /** Content-Type of the body; application/json when absent. */
  contentType?: string;
  /** This request's deadline, when it differs from the transport's (Event writes: shorter). */
  timeoutMs?: number;
  /**
   * Never sent again in place after a failure without Retry-After, though it names its object
   * (in-place-retry.ts): an Event create, whose AlreadyExists the recorder reads as a second
   * report of the same step and counts in the Event's series.
   */
  once?: true;
  /**
   * Ends the request early (combined with the timeout); the delivery's signal when absent. Once
   * it has aborted, nothing is sent.
   */
  signal?: AbortSignal;
}

export type HttpOutcome =
  | {
      kind: 'response';
      statusCode: number;
      body: string;
      /** The Retry-After header in whole seconds, when it is one (in-place-retry.ts). */
      retryAfterSeconds?: number;
    }
  | Exclude<RequestFailure, { kind: 'http' } | { kind: 'decode' }>;

export type Send = (req: HttpRequest) => Promise<HttpOutcome>;

/** A kubeconfig read at the first request that needs it (see onceKubeConfig). */
export type KubeConfigSource = () => Promise<KubeConfig>;

/**
 * The loader run once: its answer is kept, and a failure is not (the next request tries again).
 */
export function onceKubeConfig(load: KubeConfigSource): KubeConfigSource {
  let loading: Promise<KubeConfig> | undefined;
  return () =>
    (loading ??= load().catch((e: unknown) => {
      loading = undefined;
      throw e;
    }));
}

interface TlsMaterial {
  ca?: string | Buffer | (string | Buffer)[];
  cert?: string | Buffer | (string | Buffer)[];
  key?: unknown;
  pfx?: unknown;
  passphrase?: string;
  rejectUnauthorized?: boolean;
  servername?: string;
}

const TLS_FIELDS = [
  'ca',
  'cert',
  'key',
  'pfx',
  'passphrase',
  'rejectUnauthorized',
  'servername',
] as const;

/** Idle keep-alive sockets are closed after this long. */
const IDLE_SOCKET_MS = 30_000;

export function createTransport(
  kubeConfig: KubeConfig | KubeConfigSource,
  timeoutMs: number,
): Send {
  if (typeof kubeConfig !== 'function') return transportOn(kubeConfig, timeoutMs);
  const source = kubeConfig;
  let sending: Send | undefined;
  return async (req) => {
    if (sending === undefined) {
      let loaded: KubeConfig;
      try {
        loaded = await source();
      } catch (err) {
        // As an unusable credential: the message may quote the kubeconfig; keep only the code.
        const code = errorCode(err);
        return code !== undefined ? { kind: 'credentials', code } : { kind: 'credentials' };
      }
      sending ??= transportOn(loaded, timeoutMs);
    }
    return sending(req);
  };
}

function transportOn(kubeConfig: KubeConfig, timeoutMs: number): Send {
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null) throw new Error('kubeconfig has no current cluster');
  let server: URL;
  try {
    server = new URL(cluster.server);
  } catch {
    throw new Error(`kubeconfig cluster ${cluster.name} has no valid server URL`);
  }
  const secure = server.protocol === 'https:';
  const basePath = server.pathname.replace(/\/+$/, '');
  const hostname = server.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = server.port !== '' ? Number(server.port) : secure ? 443 : 80;
  const viaProxy = cluster.proxyUrl !== undefined && cluster.proxyUrl !== '';

  let cached: { tls: TlsMaterial; agent: http.Agent } | undefined;
  const agentFor = (opts: https.RequestOptions): http.Agent | undefined => {
    // A proxy needs client-node's proxy agent, built for this request.
    if (viaProxy) return opts.agent instanceof http.Agent ? opts.agent : undefined;
    const tls = pickTls(opts);
    if (cached !== undefined && sameTls(cached.tls, tls)) return cached.agent;
    const agentOpts = { keepAlive: true, timeout: IDLE_SOCKET_MS, ...tls } as https.AgentOptions;
    cached = { tls, agent: secure ? new https.Agent(agentOpts) : new http.Agent(agentOpts) };
    return cached.agent;
  };

  return async (req: HttpRequest): Promise<HttpOutcome> => {
    const signal = req.signal ?? deliverySignal();
    if (ended(signal)) return { kind: 'aborted' };
    const opts: https.RequestOptions = {};
    try {
      await kubeConfig.applyToHTTPSOptions(opts);
    } catch (err) {
      // The message of an auth plugin failure may quote its output: keep only the code.
      const code = errorCode(err);
      return code !== undefined ? { kind: 'credentials', code } : { kind: 'credentials' };
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.headers ?? {})) {
      if (typeof v === 'string' || typeof v === 'number') headers[k] = String(v);
      else if (Array.isArray(v)) headers[k] = v.join(', ');
    }
    headers['Accept'] = 'application/json';
    let payload: string | undefined;
    if (req.body !== undefined) {
      payload = JSON.stringify(req.body);
      headers['Content-Type'] = req.contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) search.set(k, v);
    const qs = search.toString();
    const agent = agentFor(opts);
    // The credentials may have taken a while (an exec plugin): look again before sending.
    if (ended(signal)) return { kind: 'aborted' };

    return new Promise<HttpOutcome>((resolve) => {
      let done = false;
      const finish = (outcome: HttpOutcome): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(outcome);
      };
      const onAbort = (): void => {
        finish({ kind: 'aborted' });
        request.destroy();
      };
      let request: http.ClientRequest;
      try {
        request = (secure ? https : http).request(
          {
            method: req.method,
            hostname,
            port,
            path: `${basePath}${req.path}${qs !== '' ? `?${qs}` : ''}`,
            headers,
            ...(agent !== undefined ? { agent } : {}),
            ...(opts.auth !== undefined ? { auth: opts.auth } : {}),
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('error', (err) => finish(transportFailure(err)));
            res.on('end', () => {
              const retryAfter = retryAfterSeconds(res.headers['retry-after']);
              finish({
                kind: 'response',
                statusCode: res.statusCode ?? 0,
                body: Buffer.concat(chunks).toString('utf8'),
                ...(retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {}),
              });
            });
          },
        );
      } catch (err) {
        // An unusable client key or certificate throws here, synchronously, from OpenSSL. Keep
        // only the code: the message may describe the key material.
        const code = errorCode(err);
        resolve(code !== undefined ? { kind: 'credentials', code } : { kind: 'credentials' });
        return;
      }
      const deadlineMs = req.timeoutMs ?? timeoutMs;
      const timer = setTimeout(() => {
        finish({ kind: 'timeout', timeoutMs: deadlineMs });
        request.destroy();
      }, deadlineMs);
      request.on('error', (err) => finish(transportFailure(err)));
      signal?.addEventListener('abort', onAbort, { once: true });
      request.end(payload);
    });
  };
}

/**
 * Retry-After as whole seconds (the form the API server sends, and the only one client-go reads);
 * an HTTP date or anything else is no wait to sit out.
 */
function retryAfterSeconds(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,6}$/.test(value.trim())) return undefined;
  return Number(value.trim());
}

/** A function, so that a second look after an await is not narrowed away. */
function ended(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

function pickTls(opts: https.RequestOptions): TlsMaterial {
  const out: Record<string, unknown> = {};
  for (const f of TLS_FIELDS) if (opts[f] !== undefined) out[f] = opts[f];
  return out as TlsMaterial;
}

function sameTls(a: TlsMaterial, b: TlsMaterial): boolean {
  return TLS_FIELDS.every((f) => sameValue(a[f], b[f]));
}

function sameValue(a: unknown, b: unknown): boolean {
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((x, i) => sameValue(x, b[i]));
  }
  return a === b;
}

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : err instanceof Error ? err.name : undefined;
}

/** Node's messages for socket errors name the address and the syscall, never the headers. */
function transportFailure(err: Error): HttpOutcome {
  const code = errorCode(err);
  const message = err.message;
  return code !== undefined ? { kind: 'transport', code, message } : { kind: 'transport', message };
}
