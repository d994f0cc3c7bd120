// `npm start -- --kubeconfig` waits for the API server (harness/api-server-wait.ts): what each
// answer to its probe means (wait, go, or a clear error naming the kubeconfig's user), and the
// wait itself against a local server that answers 503 twice, then 200; and 403 at once.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  judgeProbe,
  PROBE_PATH,
  retryDelayMs,
  waitForApiServer,
  type ProbeVerdict,
} from '../../harness/api-server-wait.js';
import { proxyKubeConfig } from '../../support/kube-proxy.js';
import type { HttpOutcome } from '../../../shared/kube/transport.js';

const target = { server: 'https://10.0.0.1:6443', user: 'ops', hasCredentials: true };
const status = (code: number, message: string): HttpOutcome => ({
  kind: 'response',
  statusCode: code,
  body: JSON.stringify({ kind: 'Status', code, message }),
});

describe('judgeProbe', () => {
  const cases: [string, HttpOutcome, ProbeVerdict['kind'], RegExp][] = [
    ['a list answer', { kind: 'response', statusCode: 200, body: '{"items":[]}' }, 'ready', /./],
    [
      'connection refused',
      { kind: 'transport', code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 10.0.0.1:6443' },
      'retry',
      /^connect ECONNREFUSED 10\.0\.0\.1:6443$/,
    ],
    [
      'no answer in time',
      { kind: 'timeout', timeoutMs: 5000 },
      'retry',
      /no answer within 5000 ms/,
    ],
    ['503 (starting)', status(503, 'not ready'), 'retry', /^HTTP 503: not ready$/],
    ['429', status(429, 'slow down'), 'retry', /^HTTP 429/],
    ['502 from a proxy', status(502, 'upstream error'), 'retry', /^HTTP 502/],
    [
      '401',
      status(401, 'Unauthorized'),
      'fatal',
      /https:\/\/10\.0\.0\.1:6443 does not accept the credentials of kubeconfig user "ops" \(401/,
    ],
    [
      '403',
      status(403, 'User "ops" cannot list resource "artifactgenerators"'),
      'fatal',
      /^kubeconfig user "ops" may not list ArtifactGenerators .*403 Forbidden: User "ops" cannot list/,
    ],
    ['404 (no CRD)', status(404, 'not found'), 'fatal', /does not serve ArtifactGenerators/],
    ['400', status(400, 'bad'), 'fatal', /as kubeconfig user "ops" with HTTP 400: bad/],
    [
      'credentials that cannot be prepared',
      { kind: 'credentials', code: 'ENOENT' },
      'fatal',
      /credentials of kubeconfig user "ops" could not be prepared \(ENOENT\)/,
    ],
  ];
  it.each(cases)('%s', (_, outcome, kind, text) => {
    const verdict = judgeProbe(outcome, target);
    expect(verdict.kind).toBe(kind);
    if (verdict.kind === 'retry') expect(verdict.reason).toMatch(text);
    if (verdict.kind === 'fatal') expect(verdict.message).toMatch(text);
  });

  it('a 401 for a user without credentials of its own asks whether the proxy adds them', () => {
    const verdict = judgeProbe(status(401, 'Unauthorized'), { ...target, hasCredentials: false });
    expect(verdict).toMatchObject({ kind: 'fatal', message: expect.stringMatching(/proxy/) });
    expect(judgeProbe(status(401, 'Unauthorized'), target)).not.toMatchObject({
      message: expect.stringMatching(/proxy/),
    });
  });

  it('retries after 1 s, 2 s, 4 s, then every 5 s', () => {
    expect([0, 1, 2, 3, 4, 10].map(retryDelayMs)).toEqual([1000, 2000, 4000, 5000, 5000, 5000]);
  });
});

describe('waitForApiServer', () => {
  const servers: Server[] = [];
  afterEach(() => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      s.close();
    }
  });

  async function serve(answers: number[]): Promise<{ url: string; paths: string[] }> {
    const paths: string[] = [];
    const server = createServer((req, res) => {
      paths.push(req.url ?? '');
      const code = answers.shift() ?? 200;
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(code === 200 ? { items: [] } : { code, message: `answer ${code}` }));
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths };
  }

  it('says why it waits, retries, and goes on once the API server answers', async () => {
    const { url, paths } = await serve([503, 503]);
    const lines: string[] = [];
    await waitForApiServer({
      kubeConfig: proxyKubeConfig(url),
      target: { server: url, user: 'kube-proxy', hasCredentials: false },
      waitMs: 30_000,
      say: (l) => lines.push(l),
    });
    expect(lines).toEqual([
      `waiting for the API server at ${url}: HTTP 503: answer 503; retrying in 1s`,
      `waiting for the API server at ${url}: HTTP 503: answer 503; retrying in 2s`,
    ]);
    expect(paths).toEqual(Array(3).fill(`${PROBE_PATH}?limit=1`));
  });

  it('a 403 is an error at once, naming the user', async () => {
    const { url, paths } = await serve([403]);
    const lines: string[] = [];
    await expect(
      waitForApiServer({
        kubeConfig: proxyKubeConfig(url),
        target: { server: url, user: 'kube-proxy', hasCredentials: false },
        waitMs: 30_000,
        say: (l) => lines.push(l),
      }),
    ).rejects.toThrow(/kubeconfig user "kube-proxy" may not list ArtifactGenerators/);
    expect(lines).toEqual([]);
    expect(paths).toHaveLength(1);
  });

  it('ends early, without an error, once stopped says so (Ctrl-C while waiting)', async () => {
    const { url } = await serve([503, 503, 503, 503, 503]);
    const lines: string[] = [];
    let saidAt = 0;
    await waitForApiServer({
      kubeConfig: proxyKubeConfig(url),
      target: { server: url, user: 'kube-proxy', hasCredentials: false },
      waitMs: 30_000,
      say: (l) => {
        saidAt = Date.now();
        lines.push(l);
      },
      stopped: () => lines.length > 0,
    });
    expect(lines).toHaveLength(1);
    // During the first pause (1 s), not after it.
    expect(Date.now() - saidAt).toBeLessThan(900);
  });

  it('gives up after the bound with the last reason', async () => {
    const { url } = await serve([]);
    const gone = servers.pop();
    await new Promise((r) => gone?.close(r));
    const lines: string[] = [];
    await expect(
      waitForApiServer({
        kubeConfig: proxyKubeConfig(url),
        target: { server: url, user: 'kube-proxy', hasCredentials: false },
        waitMs: 1500,
        say: (l) => lines.push(l),
      }),
    ).rejects.toThrow(
      /did not answer within 1\.5 s \(last: connect ECONNREFUSED .*\); .*--wait-seconds/,
    );
    expect(lines[0]).toMatch(/ECONNREFUSED.*; retrying in 1s$/);
  });
});
