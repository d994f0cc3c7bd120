// The adapter against API servers that misbehave: nobody listening, a server that accepts and never
// answers, one that hangs up, one that answers garbage. Real sockets on 127.0.0.1; every failure
// must come back as a typed error, quickly, and without the credentials the request carried.

import http from 'node:http';
import net from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeClient } from '../../shared/kube/client.js';
import { type KubeError, type KubeErrorKind } from '../../shared/kube/errors.js';
import type { KubePort } from '../../shared/kube/port.js';
import { onceKubeConfig } from '../../shared/kube/transport.js';
import { failureOf } from '../support/kube-failure.js';
import { inDelivery } from '../../shared/runtime/delivery.js';
import { systemClock } from '../../shared/runtime/clock.js';

const TOKEN = 'sha256~adapter-test-secret-token-0123456789';
const FIELD_MANAGER = 'adapter-transport-test';

function kubeConfigFor(server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u', token: TOKEN }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
    currentContext: 'ctx',
  });
  return kc;
}

function expectNoCredentials(err: KubeError): void {
  const everything = [err.message, err.stack ?? '', JSON.stringify(err), String(err)].join('\n');
  expect(everything).not.toContain(TOKEN);
  expect(everything).not.toMatch(/authorization|bearer/i);
  expect(err.cause).toBeUndefined();
}

const ref = { namespace: 'ns1', name: 'ag1' };
const calls: [string, (k: KubePort) => Promise<unknown>][] = [
  ['getArtifactGenerator', (k) => k.getArtifactGenerator(ref)],
  ['listArtifactGenerators', (k) => k.listArtifactGenerators()],
  ['getPackageSource', (k) => k.getPackageSource('ps1', { cached: true })],
  [
    'patchArtifactGeneratorAnnotations',
    (k) => k.patchArtifactGeneratorAnnotations(ref, { a: 'b' }),
  ],
  ['patchPackageSourceConditions', (k) => k.patchPackageSourceConditions('ps1', [])],
  ['deletePingSource', (k) => k.deletePingSource('ns1', 'p1', { resourceVersion: '7' })],
];

/** A TCP server that accepts connections, keeps what it receives, and never answers. */
class SilentServer {
  readonly server = net.createServer((s) => {
    this.sockets.add(s);
    s.on('data', (d: Buffer) => {
      this.received += d.toString('latin1');
    });
    s.on('error', () => undefined);
    s.on('close', () => this.sockets.delete(s));
  });
  readonly sockets = new Set<net.Socket>();
  received = '';

  async start(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as net.AddressInfo).port;
  }
  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** An HTTP server that behaves as told, and counts the requests that reach it. */
class ScriptedServer {
  requests = 0;
  behaviour: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_req, res) =>
    res.end();
  readonly server = http.createServer((req, res) => {
    this.requests += 1;
    this.behaviour(req, res);
  });

  async start(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as net.AddressInfo).port;
  }
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * Starts `server` before the tests of the describe it is called in (stopped after them) and
 * returns the adapter in front of it, the kubeconfig's server at `path` on it.
 */
function clientOf(server: ScriptedServer, path = '', requestTimeoutMs?: number): () => KubePort {
  let kube: KubePort | undefined;
  beforeAll(async () => {
    const port = await server.start();
    kube = createKubeClient({
      clock: systemClock,
      kubeConfig: kubeConfigFor(`http://127.0.0.1:${port}${path}`),
      fieldManager: FIELD_MANAGER,
      ...(requestTimeoutMs !== undefined ? { requestTimeoutMs } : {}),
    });
  });
  afterAll(() => server.stop());
  return () => {
    if (kube === undefined) throw new Error('clientOf: used before its beforeAll ran');
    return kube;
  };
}

describe('nobody listening (127.0.0.1:1)', () => {
  const kube = createKubeClient({
    clock: systemClock,
    kubeConfig: kubeConfigFor('https://127.0.0.1:1'),
    fieldManager: FIELD_MANAGER,
  });
  it.each(calls)('%s -> TransientError quickly, no credentials', async (_name, call) => {
    const started = performance.now();
    const err = await failureOf(call(kube));
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(err.kind).toBe('Transient');
    expect(err.message).toContain('ECONNREFUSED');
    expectNoCredentials(err);
  });
});

describe('a server that accepts and never answers', () => {
  const silent = new SilentServer();
  let port = 0;
  beforeAll(async () => {
    port = await silent.start();
  });
  afterAll(() => silent.stop());

  it.each([
    ['https (stuck in the TLS handshake)', 'https'],
    ['http (request sent, no response)', 'http'],
  ])('%s -> TransientError after the timeout', async (_name, scheme) => {
    silent.received = '';
    const kube = createKubeClient({
      clock: systemClock,
      kubeConfig: kubeConfigFor(`${scheme}://127.0.0.1:${port}`),
      fieldManager: FIELD_MANAGER,
      requestTimeoutMs: 400,
    });
    const started = performance.now();
    const err = await failureOf(kube.getArtifactGenerator(ref));
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(390);
    expect(elapsed).toBeLessThan(3_000);
    expect(err.kind).toBe('Transient');
    expect(err.message).toContain('get artifactgenerators ns1/ag1');
    expect(err.message).toContain('within 400 ms');
    expectNoCredentials(err);
    if (scheme === 'http') {
      // The token did travel to the server; it just never comes back in the error.
      expect(silent.received).toContain(`Bearer ${TOKEN}`);
    }
  });

  it('the timeout holds while the answer trickles in without ever finishing', async () => {
    const scripted = new ScriptedServer();
    scripted.behaviour = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"items": [');
    };
    const p = await scripted.start();
    try {
      const kube = createKubeClient({
        clock: systemClock,
        kubeConfig: kubeConfigFor(`http://127.0.0.1:${p}`),
        fieldManager: FIELD_MANAGER,
        requestTimeoutMs: 300,
      });
      const err = await failureOf(kube.listArtifactGenerators());
      expect(err.kind).toBe('Transient');
      expect(err.message).toContain('within 300 ms');
    } finally {
      await scripted.stop();
    }
  });
});

describe("the delivery's signal (ADR 57): a call in a delivery ends with it", () => {
  const silent = new SilentServer();
  let port = 0;
  beforeAll(async () => {
    port = await silent.start();
  });
  afterAll(() => silent.stop());
  const kubeOn = () =>
    createKubeClient({
      clock: systemClock,
      kubeConfig: kubeConfigFor(`http://127.0.0.1:${port}`),
      fieldManager: FIELD_MANAGER,
      requestTimeoutMs: 10_000,
    });

  it('a call in flight is cut when the delivery aborts, long before its own timeout', async () => {
    const delivery = new AbortController();
    const kube = kubeOn();
    const started = performance.now();
    const pending = inDelivery({ signal: delivery.signal }, () =>
      failureOf(kube.getArtifactGenerator(ref)),
    );
    await expect.poll(() => silent.received).toContain('GET /apis/');
    delivery.abort(new Error('deadline'));
    const err = await pending;
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(err.kind).toBe('Transient');
    expect(err.message).toContain('its delivery has ended');
    expectNoCredentials(err);
  });

  it.each(calls)('%s after the delivery ended: nothing is sent', async (_name, call) => {
    silent.received = '';
    const kube = kubeOn();
    const err = await inDelivery({ signal: AbortSignal.abort() }, () => failureOf(call(kube)));
    expect(err.kind).toBe('Transient');
    expect(err.message).toContain('abandoned');
    await new Promise((r) => setTimeout(r, 50));
    expect(silent.received).toBe('');
  });
});

describe('a server that answers badly', () => {
  const scripted = new ScriptedServer();
  const kube = clientOf(scripted, '', 2_000);

  const table: [
    string,
    (req: http.IncomingMessage, res: http.ServerResponse) => void,
    KubeErrorKind,
    string,
  ][] = [
    ['hangs up mid-request', (req) => req.socket.destroy(), 'Transient', 'socket hang up'],
    [
      'answers 200 with text',
      (_req, res) => res.writeHead(200).end('hello'),
      'Transient',
      'not the expected JSON object',
    ],
    [
      'answers 200 with a JSON array',
      (_req, res) => res.writeHead(200).end('[1,2]'),
      'Transient',
      'not the expected JSON object',
    ],
    [
      'answers 502 with an HTML page echoing the token',
      (req, res) => res.writeHead(502).end(`<html>${req.headers.authorization ?? ''}</html>`),
      'Transient',
      'HTTP 502',
    ],
    [
      'answers 403 with a Status',
      (_req, res) =>
        res
          .writeHead(403, { 'Content-Type': 'application/json' })
          .end(
            '{"kind":"Status","reason":"Forbidden","message":"no access to artifactgenerators"}',
          ),
      'Forbidden',
      'no access to artifactgenerators',
    ],
    ['answers 429', (_req, res) => res.writeHead(429).end(), 'Transient', 'HTTP 429'],
  ];
  it.each(table)('%s -> %s', async (_name, behaviour, kind, text) => {
    scripted.behaviour = behaviour;
    const err = await failureOf(kube().getArtifactGenerator(ref));
    expect(err.kind).toBe(kind);
    expect(err.message).toContain(text);
    expectNoCredentials(err);
  });
});

describe('a kubeconfig given as a loader (one per function, read at the first request)', () => {
  const server = new ScriptedServer();
  server.behaviour = (_req, res) =>
    res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"metadata":{"name":"ag1"}}');
  let port = 0;
  beforeAll(async () => {
    port = await server.start();
  });
  afterAll(() => server.stop());

  it('is read once, at the first request, for every client and every concurrent call', async () => {
    let loads = 0;
    const kubeConfig = onceKubeConfig(async () => {
      loads += 1;
      await new Promise((r) => setTimeout(r, 20));
      return kubeConfigFor(`http://127.0.0.1:${port}`);
    });
    const kube = createKubeClient({ clock: systemClock, kubeConfig, fieldManager: FIELD_MANAGER });
    const other = createKubeClient({
      clock: systemClock,
      kubeConfig,
      fieldManager: `${FIELD_MANAGER}-2`,
    });
    expect(loads).toBe(0);
    const before = server.requests;
    const read = await Promise.all([
      kube.getArtifactGenerator(ref),
      kube.getArtifactGenerator(ref),
      other.getArtifactGenerator(ref),
    ]);
    expect(read.map((ag) => ag.metadata?.name)).toEqual(['ag1', 'ag1', 'ag1']);
    expect(loads).toBe(1);
    expect(server.requests - before).toBe(3);
  });

  it('a failed read is a typed credentials error that sends nothing, and the next call reads again', async () => {
    let loads = 0;
    const kubeConfig = onceKubeConfig(async () => {
      loads += 1;
      if (loads === 1)
        throw Object.assign(new Error(`bad file holding ${TOKEN}`), { code: 'EACCES' });
      return kubeConfigFor(`http://127.0.0.1:${port}`);
    });
    const kube = createKubeClient({ clock: systemClock, kubeConfig, fieldManager: FIELD_MANAGER });
    const before = server.requests;
    const err = await failureOf(kube.getArtifactGenerator(ref));
    expect(err.kind).toBe('Transient');
    expect(err.message).toContain('EACCES');
    expectNoCredentials(err);
    expect(server.requests).toBe(before);
    expect((await kube.getArtifactGenerator(ref)).metadata?.name).toBe('ag1');
    expect(loads).toBe(2);
    expect(server.requests).toBe(before + 1);
  });
});

describe('the wire format of every call', () => {
  // What a real API server cannot show afterwards (a cached read, the exact patch body) is checked
  // on the wire: a server that records each request and answers with an empty object.
  interface Seen {
    method: string;
    path: string;
    query: Record<string, string>;
    contentType: string | undefined;
    body: unknown;
  }
  const seen: Seen[] = [];
  const recorder = new ScriptedServer();
  recorder.behaviour = (req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      seen.push({
        method: req.method ?? '',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        contentType: req.headers['content-type'],
        body: text === '' ? undefined : JSON.parse(text),
      });
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"items":[]}');
    });
  };
  const kube = clientOf(recorder, '/prefix/');

  const AGS = '/prefix/apis/source.extensions.fluxcd.io/v1beta1';
  const PSS = '/prefix/apis/cozystack.io/v1alpha1/packagesources';
  const PINGS = '/prefix/apis/sources.knative.dev/v1/namespaces/ns1/pingsources';
  const MERGE = 'application/merge-patch+json';
  const fm = { fieldManager: FIELD_MANAGER };
  const cond = [{ type: 'Ready', status: 'True', reason: 'Succeeded' }];
  type Expected = Omit<Seen, 'body'> & { body?: unknown };
  /** A GET of `path` with `query`, no body. */
  const get = (path: string, query: Record<string, string> = {}): Expected => ({
    method: 'GET',
    path,
    query,
    contentType: undefined,
  });
  /** A merge patch of `path` with `body`, as the field manager. */
  const merge = (path: string, body: unknown): Expected => ({
    method: 'PATCH',
    path,
    query: fm,
    contentType: MERGE,
    body,
  });
  const table: [string, (k: KubePort) => Promise<unknown>, Expected][] = [
    [
      'live get',
      (k) => k.getArtifactGenerator(ref),
      get(`${AGS}/namespaces/ns1/artifactgenerators/ag1`),
    ],
    [
      'cached get',
      (k) => k.getPackageSource('ps1', { cached: true }),
      get(`${PSS}/ps1`, { resourceVersion: '0' }),
    ],
    [
      'cached first page across namespaces',
      (k) => k.listArtifactGenerators({ cached: true }),
      get(`${AGS}/artifactgenerators`, { limit: '500', resourceVersion: '0' }),
    ],
    [
      'cached next page: the continue token replaces resourceVersion',
      (k) =>
        k.listArtifactGenerators({
          namespace: 'ns2',
          cached: true,
          limit: 7,
          continueToken: 'abc',
        }),
      get(`${AGS}/namespaces/ns2/artifactgenerators`, { limit: '7', continue: 'abc' }),
    ],
    [
      'annotations with a precondition',
      (k) =>
        k.patchArtifactGeneratorAnnotations(ref, { a: '1', b: null }, { resourceVersion: '42' }),
      merge(`${AGS}/namespaces/ns1/artifactgenerators/ag1`, {
        metadata: { annotations: { a: '1', b: null }, resourceVersion: '42' },
      }),
    ],
    [
      'AG conditions with a precondition',
      (k) => k.patchArtifactGeneratorConditions(ref, cond, { resourceVersion: '43' }),
      merge(`${AGS}/namespaces/ns1/artifactgenerators/ag1/status`, {
        metadata: { resourceVersion: '43' },
        status: { conditions: cond },
      }),
    ],
    [
      'PackageSource conditions without a precondition',
      (k) => k.patchPackageSourceConditions('ps1', cond),
      merge(`${PSS}/ps1/status`, { status: { conditions: cond } }),
    ],
    [
      'PingSource create',
      (k) =>
        k.createPingSource('ns1', { metadata: { name: 'p1' }, spec: { schedule: '0 * * * *' } }),
      {
        method: 'POST',
        path: PINGS,
        query: fm,
        contentType: 'application/json',
        body: {
          apiVersion: 'sources.knative.dev/v1',
          kind: 'PingSource',
          metadata: { name: 'p1', namespace: 'ns1' },
          spec: { schedule: '0 * * * *' },
        },
      },
    ],
    [
      'PingSource patch with a precondition',
      (k) =>
        k.patchPingSource(
          'ns1',
          'p1',
          { metadata: { labels: { a: 'b' } }, spec: { schedule: '1 * * * *' } },
          { resourceVersion: '44' },
        ),
      merge(`${PINGS}/p1`, {
        metadata: { labels: { a: 'b' }, resourceVersion: '44' },
        spec: { schedule: '1 * * * *' },
      }),
    ],
    [
      'PingSource delete with a precondition',
      (k) => k.deletePingSource('ns1', 'p1', { resourceVersion: '45' }),
      {
        method: 'DELETE',
        path: `${PINGS}/p1`,
        query: {},
        contentType: 'application/json',
        body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { resourceVersion: '45' } },
      },
    ],
  ];
  it.each(table)('%s', async (_name, call, expected) => {
    seen.length = 0;
    await call(kube());
    expect(seen).toEqual([{ body: undefined, ...expected }]);
  });
});

describe('bad input is refused before anything is sent', () => {
  const scripted = new ScriptedServer();
  const kube = clientOf(scripted);

  const bad: [string, (k: KubePort) => Promise<unknown>][] = [
    ['empty AG name', (k) => k.getArtifactGenerator({ namespace: 'ns', name: '' })],
    ['AG name with a slash', (k) => k.getArtifactGenerator({ namespace: 'ns', name: 'a/b' })],
    ['namespace with a query', (k) => k.getArtifactGenerator({ namespace: 'ns?x=1', name: 'a' })],
    ['upper-case PackageSource name', (k) => k.getPackageSource('Flux')],
    ['list in a bad namespace', (k) => k.listArtifactGenerators({ namespace: '../x' })],
    ['zero limit', (k) => k.listArtifactGenerators({ limit: 0 })],
    ['fractional limit', (k) => k.listPackageSources({ limit: 1.5 })],
    [
      'numeric annotation value',
      (k) =>
        k.patchArtifactGeneratorAnnotations(
          ref,
          { a: 1 as unknown as string },
          { resourceVersion: '1' },
        ),
    ],
    ['conditions not an array', (k) => k.patchArtifactGeneratorConditions(ref, {} as never)],
    [
      'a condition that is not an object',
      (k) => k.patchPackageSourceConditions('ps', [null as never]),
    ],
    [
      'PingSource without a name',
      (k) => k.createPingSource('ns', { spec: { schedule: '* * * * *' } }),
    ],
    [
      'PingSource in another namespace',
      (k) => k.createPingSource('ns', { metadata: { name: 'p', namespace: 'other' } }),
    ],
    ['PingSource patch that is an array', (k) => k.patchPingSource('ns', 'p', [] as never)],
    ['PingSource delete with a bad name', (k) => k.deletePingSource('ns', 'P_1')],
  ];
  it.each(bad)('%s -> InvalidError, no request', async (_name, call) => {
    const before = scripted.requests;
    const err = await failureOf(call(kube()));
    expect(err.kind).toBe('Invalid');
    expect(scripted.requests).toBe(before);
  });

  it('rejects a bad client configuration', () => {
    const kubeConfig = kubeConfigFor('http://127.0.0.1:1');
    expect(() => createKubeClient({ clock: systemClock, kubeConfig, fieldManager: '' })).toThrow(
      /fieldManager/,
    );
    expect(() =>
      createKubeClient({ clock: systemClock, kubeConfig, fieldManager: 'x', requestTimeoutMs: 0 }),
    ).toThrow(/requestTimeoutMs/);
  });
});
