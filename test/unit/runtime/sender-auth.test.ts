// The sender check's glue without an API server: the cache and the single flight around the
// reviewer, the expiry on the wall clock, and what a failing reviewer answers. The real
// TokenReview is exercised in test/integration/functions/sender-auth.test.ts.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ReviewedToken } from '../../../shared/core/access/sender-auth.js';
import { InvalidError, TransientError } from '../../../shared/kube/errors.js';
import type { TokenReviewer } from '../../../shared/kube/token-review.js';
import { createBrokerEmitter } from '../../../shared/runtime/broker-emitter.js';
import { createLogger } from '../../../shared/runtime/logger.js';
import { createSenderAuth } from '../../../shared/runtime/sender-auth.js';
import { fileTokenSource, SINK_TOKEN_REREAD_MS } from '../../../shared/runtime/sink-token.js';
import { startHttp } from '../../support/http-events.js';

const AUD = 'serving.knative.dev/service/ns/detect';
const USER = 'system:serviceaccount:ns:detect-ag-add-oidc-eventing.knative.dev-trigger';
const NOW = 1_800_000_000_000;

function jwt(expSeconds: number, jti: string, aud = AUD): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64url');
  return `${b64('{"alg":"RS256"}')}.${b64(JSON.stringify({ exp: expSeconds, aud, jti }))}.c2ln`;
}

/** A reviewer that answers from a table, counting and optionally holding its answers. */
function tableReviewer(answer: (token: string) => ReviewedToken | Error) {
  const state = { calls: 0, release: undefined as (() => void) | undefined };
  let gate: Promise<void> | undefined;
  const reviewer: TokenReviewer = {
    async review(token, audiences) {
      state.calls += 1;
      expect(audiences).toEqual([AUD]);
      if (gate !== undefined) await gate;
      const a = answer(token);
      if (a instanceof Error) throw a;
      return a;
    },
  };
  return {
    reviewer,
    state,
    hold: () => {
      gate = new Promise((r) => (state.release = r));
    },
  };
}

const ok: ReviewedToken = { authenticated: true, username: USER, audiences: [AUD] };
const headers = (token: string) => ({ authorization: `Bearer ${token}` });
const config = {
  mode: 'oidc',
  audience: AUD,
  allowedSenders: [USER],
  sinkTokenFile: undefined,
} as const;

describe('createSenderAuth', () => {
  it('one review for concurrent and later deliveries with one token, until it expires', async () => {
    let now = NOW;
    const t = tableReviewer(() => ok);
    const auth = createSenderAuth({ config, reviewer: t.reviewer, now: () => now });
    const token = jwt(NOW / 1000 + 600, 'a');
    t.hold();
    const pending = Array.from({ length: 5 }, () => auth.check(headers(token)));
    t.state.release?.();
    const results = await Promise.all(pending);
    expect(results.every((r) => r.ok)).toBe(true);
    expect(await auth.check(headers(token))).toEqual({ ok: true, username: USER, reviewed: false });
    expect(t.state.calls).toBe(1);
    expect(auth.reviews).toBe(1);
    now = NOW + 600_000 + 30_000;
    expect(await auth.check(headers(token))).toMatchObject({
      ok: false,
      status: 401,
      reason: 'expired token',
    });
    expect(t.state.calls).toBe(1);
  });

  it('a refused token is refused again without another review', async () => {
    const t = tableReviewer(() => ({ authenticated: false, username: undefined, audiences: [] }));
    const auth = createSenderAuth({ config, reviewer: t.reviewer, now: () => NOW });
    const token = jwt(NOW / 1000 + 600, 'b');
    for (let i = 0; i < 3; i++) {
      expect(await auth.check(headers(token))).toMatchObject({
        status: 401,
        reason: 'token rejected',
      });
    }
    expect(t.state.calls).toBe(1);
  });

  it.each([
    [new TransientError('timeout'), 'Transient'],
    [new InvalidError('odd'), 'Invalid'],
    [new Error('boom'), 'unknown'],
  ])('a failed review (%s) answers 503 and is not cached', async (error, kind) => {
    let fail = true;
    const t = tableReviewer(() => (fail ? error : ok));
    const auth = createSenderAuth({ config, reviewer: t.reviewer, now: () => NOW });
    const token = jwt(NOW / 1000 + 600, 'c');
    expect(await auth.check(headers(token))).toEqual({
      ok: false,
      status: 503,
      reason: 'token review failed',
      errorKind: kind,
    });
    fail = false;
    expect(await auth.check(headers(token))).toMatchObject({ ok: true, reviewed: true });
    expect(t.state.calls).toBe(2);
  });

  it('keeps at most cacheEntries verdicts (the least recently used goes)', async () => {
    const t = tableReviewer(() => ok);
    const auth = createSenderAuth({
      config,
      reviewer: t.reviewer,
      now: () => NOW,
      cacheEntries: 2,
    });
    const [a, b, c] = ['1', '2', '3'].map((j) => jwt(NOW / 1000 + 600, j)) as [
      string,
      string,
      string,
    ];
    for (const tok of [a, b, a, c]) await auth.check(headers(tok));
    expect(t.state.calls).toBe(3);
    await auth.check(headers(a)); // still cached
    expect(t.state.calls).toBe(3);
    await auth.check(headers(b)); // evicted
    expect(t.state.calls).toBe(4);
  });

  it('refuses to be built without oidc and an audience', () => {
    const t = tableReviewer(() => ok);
    expect(() =>
      createSenderAuth({ config: { ...config, mode: 'off' }, reviewer: t.reviewer }),
    ).toThrow(/RECOVERY_AUTH=oidc/);
  });
});

describe("detect's token to the Broker", () => {
  it('is read from the file, sent as Bearer, re-read after a minute', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sink-token-'));
    const path = join(dir, 'token');
    const seen: (string | undefined)[] = [];
    const sink = await startHttp((req, res) => {
      seen.push(req.headers.authorization);
      req.resume();
      req.on('end', () => {
        res.statusCode = 202;
        res.end();
      });
    });
    try {
      let now = NOW;
      const logger = createLogger({ name: 't', level: 'silent' });
      const bearer = fileTokenSource({ path, logger, now: () => now });
      const emitter = createBrokerEmitter({ url: sink.url, bearer });
      const event = { type: 't', source: '/s', data: {}, time: NOW };
      await emitter.emit(event); // no file yet: no token
      await writeFile(path, 'first-token\n');
      now += SINK_TOKEN_REREAD_MS;
      await emitter.emit(event);
      await writeFile(path, 'renewed-token');
      await emitter.emit(event); // within the minute: the first
      now += SINK_TOKEN_REREAD_MS;
      await emitter.emit(event);
      expect(seen).toEqual([
        undefined,
        'Bearer first-token',
        'Bearer first-token',
        'Bearer renewed-token',
      ]);
    } finally {
      await sink.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
