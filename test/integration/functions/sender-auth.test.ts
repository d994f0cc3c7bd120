// Sender authentication (RECOVERY_AUTH=oidc, docs/adr/0056) against the real API server: the
// tokens are real TokenRequest tokens of Eventing-named OIDC ServiceAccounts, the functions check
// them by TokenReview as their own ServiceAccounts (RBAC from knative/), through the recording
// proxy, which proves which API calls a delivery caused.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as k8s from '@kubernetes/client-node';
import { functionAudience } from '../../../shared/core/access/sender-auth.js';
import { createTokenReviewer } from '../../../shared/kube/token-review.js';
import { loadPodConfig } from '../../support/pod-config.js';
import { createSenderAuth } from '../../../shared/runtime/sender-auth.js';
import { SettableClock, startFunction, type RunningFunction } from '../../harness/functions.js';
import { OidcTokenProvider, oidcSubject, type OidcSender } from '../../harness/knative/index.js';
import { asFunction } from '../../support/identities.js';
import { RECOVERY_NAMESPACE } from '../../support/manifests.js';
import { cloudEvent, postEvent, resyncPing, type Answer } from '../../support/http-events.js';
import { functionFile } from './suite-kit.js';

const { T0, kc, suite } = functionFile('sender-auth');
const NS = RECOVERY_NAMESPACE;

const trigger = (name: string): OidcSender => ({
  group: 'eventing.knative.dev',
  kind: 'Trigger',
  name,
});
/** detect's senders: its Triggers (two of them here), as knative/components/sender-auth lists. */
const DETECT_TRIGGERS = ['detect-ag-update', 'detect-resync'];
const audienceOf = (fn: string) => functionAudience(fn);

/** The env that turns the check on for `fn`, hearing `triggers`. */
const authEnv = (fn: string, triggers: readonly string[]) => ({
  RECOVERY_AUTH: 'oidc',
  K_SERVICE: fn,
  RECOVERY_AUTH_SENDERS: triggers
    .map((t) => oidcSubject(NS, 'eventing.knative.dev', 'Trigger', t))
    .join(','),
});

let tokens: OidcTokenProvider;
beforeAll(() => {
  tokens = new OidcTokenProvider({ kubeConfig: kc, namespace: NS });
});

const withBearer = async (url: string, token: string | undefined, event = unknownEvent()) => {
  const { HTTP } = await import('cloudevents');
  const message = HTTP.binary(event);
  const headers: Record<string, string> = {
    ...(message.headers as Record<string, string>),
    ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}),
  };
  const res = await fetch(url, { method: 'POST', headers, body: String(message.body) });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as unknown, headers: res.headers } as Answer;
};
const unknownEvent = () => cloudEvent({ type: 'io.example.not-for-us', data: {} });

/** Every API call `fn` made since the last clearCalls. */
const callsBy = (fn: string) => suite.proxy.callsMatching({ clientTag: fn });
const reviewsBy = (fn: string) =>
  suite.proxy.callsMatching({ clientTag: fn, resource: 'tokenreviews' });

describe('detect with RECOVERY_AUTH=oidc', () => {
  let d: RunningFunction;
  beforeAll(async () => {
    d = (await suite.startDetect(new SettableClock(T0), {
      env: authEnv('detect', DETECT_TRIGGERS),
    })) as RunningFunction;
  });

  it('without a token: 401, and no API call at all', async () => {
    suite.proxy.clearCalls();
    const answer = await postEvent(d.url, resyncPing());
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toBe('Bearer');
    expect(answer.body).toEqual({ error: 'missing token' });
    expect(callsBy('detect')).toEqual([]);
    expect(suite.sink.events.length).toBe(0);
  });

  it.each([
    ['Basic dXNlcjpwdw==', 'malformed token'],
    ['Bearer not-a-jwt', 'malformed token'],
  ])('Authorization: %s -> 401 %s, no API call', async (header, reason) => {
    suite.proxy.clearCalls();
    const { HTTP } = await import('cloudevents');
    const message = HTTP.binary(resyncPing());
    const res = await fetch(d.url, {
      method: 'POST',
      headers: { ...(message.headers as Record<string, string>), authorization: header },
      body: String(message.body),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: reason });
    expect(callsBy('detect')).toEqual([]);
  });

  it("a token for another audience (TokenRequest for force-drift's): 401, no API call", async () => {
    const other = await tokens.tokenFor(trigger('detect-ag-update'), audienceOf('force-drift'));
    suite.proxy.clearCalls();
    const answer = await withBearer(d.url, other, resyncPing());
    expect(answer).toMatchObject({ status: 401, body: { error: 'wrong audience' } });
    expect(callsBy('detect')).toEqual([]);
  });

  it('a forged token (claims edited, signature kept): 401 after one TokenReview, nothing else', async () => {
    const real = await tokens.tokenFor(trigger('detect-ag-update'), audienceOf('detect'));
    const [h, p, s] = real.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: 'system:serviceaccount:x:y' })).toString('base64url')}.${s}`;
    suite.proxy.clearCalls();
    const answer = await withBearer(d.url, forged, resyncPing());
    expect(answer).toMatchObject({ status: 401, body: { error: 'token rejected' } });
    expect(callsBy('detect').map((c) => `${c.verb} ${c.resource}`)).toEqual([
      'create tokenreviews',
    ]);
  });

  it("a valid token of another identity (any pod can mint one for detect's audience): 403", async () => {
    const intruder = await tokens.tokenFor(trigger('intruder'), audienceOf('detect'));
    suite.proxy.clearCalls();
    const answer = await withBearer(d.url, intruder, resyncPing());
    expect(answer).toMatchObject({ status: 403, body: { error: 'sender not allowed' } });
    expect(callsBy('detect').map((c) => `${c.verb} ${c.resource}`)).toEqual([
      'create tokenreviews',
    ]);
  });

  it('a valid token of its Trigger: handled (the sweep runs), after one TokenReview', async () => {
    const token = await tokens.tokenFor(trigger('detect-resync'), audienceOf('detect'));
    suite.proxy.clearCalls();
    const answer = await withBearer(d.url, token, resyncPing());
    expect(answer.status).toBe(200);
    const calls = callsBy('detect');
    expect(calls[0]).toMatchObject({ verb: 'create', resource: 'tokenreviews', status: 201 });
    // The sweep's LIST came after the check.
    expect(
      calls.slice(1).some((c) => c.verb === 'list' && c.resource === 'artifactgenerators'),
    ).toBe(true);
  });

  it('N deliveries with one token, sequential and concurrent: one TokenReview', async () => {
    const token = await tokens.tokenFor(trigger('detect-ag-update'), audienceOf('detect'));
    suite.proxy.clearCalls();
    const before = d.senderAuth?.reviews ?? 0;
    const first = await Promise.all(Array.from({ length: 5 }, () => withBearer(d.url, token)));
    for (let i = 0; i < 5; i++) first.push(await withBearer(d.url, token));
    expect(first.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(reviewsBy('detect')).toHaveLength(1);
    expect((d.senderAuth?.reviews ?? 0) - before).toBe(1);
  });

  it('a token of a deleted ServiceAccount: 401 (the API server no longer vouches for it)', async () => {
    const sender = trigger('detect-ag-update-gone');
    const goneAuth = createSenderAuth({
      config: loadPodConfig(authEnv('detect', ['detect-ag-update-gone'])).auth,
      reviewer: createTokenReviewer({
        kubeConfig: asFunction(suite.proxy.kubeConfig('detect'), 'detect'),
        requestTimeoutMs: 5000,
      }),
    });
    const f = await startFunction({
      fn: 'detect',
      kubeConfig: suite.proxy.kubeConfig('detect'),
      clock: new SettableClock(T0),
      sinkUrl: suite.sink.url,
      env: authEnv('detect', ['detect-ag-update-gone']),
      senderAuth: goneAuth,
    });
    try {
      const token = await tokens.tokenFor(sender, audienceOf('detect'));
      await kc
        .makeApiClient(k8s.CoreV1Api)
        .deleteNamespacedServiceAccount({ name: tokens.accountOf(sender), namespace: NS });
      suite.proxy.clearCalls();
      expect(await withBearer(f.url, token)).toMatchObject({
        status: 401,
        body: { error: 'token rejected' },
      });
      expect(callsBy('detect').map((c) => c.resource)).toEqual(['tokenreviews']);
    } finally {
      await f.close();
    }
  });
});

describe('an expired token, and a TokenReview that fails', () => {
  let f: RunningFunction;
  let wall = Date.now();
  const fn = 'force-drift';
  const senders = ['force-drift-force'];
  beforeAll(async () => {
    f = await startFunction({
      fn,
      kubeConfig: suite.proxy.kubeConfig(fn),
      clock: new SettableClock(T0),
      env: authEnv(fn, senders),
      senderAuth: createSenderAuth({
        config: loadPodConfig(authEnv(fn, senders)).auth,
        reviewer: createTokenReviewer({
          kubeConfig: asFunction(suite.proxy.kubeConfig(fn), fn),
          requestTimeoutMs: 1000,
        }),
        // The wall clock, moved by the test: the API server's tokens last 10 minutes at least.
        now: () => wall,
      }),
    });
  });
  afterAll(async () => {
    await f.close();
    suite.proxy.clearFaults();
  });

  it('valid while it lasts, then 401 expired, without a call, cached verdict or not', async () => {
    const short = new OidcTokenProvider({ kubeConfig: kc, namespace: NS, expirationSeconds: 600 });
    const token = await short.tokenFor(trigger('force-drift-force'), audienceOf(fn));
    wall = Date.now();
    expect((await withBearer(f.url, token)).status).toBe(200);
    suite.proxy.clearCalls();
    wall = Date.now() + 601_000 + 30_000;
    expect(await withBearer(f.url, token)).toMatchObject({
      status: 401,
      body: { error: 'expired token' },
    });
    expect(callsBy(fn)).toEqual([]);
    wall = Date.now();
  });

  it.each([
    ['503', { kind: 'status', status: 503 } as const],
    ['429', { kind: 'status', status: 429 } as const],
    ['a timeout', { kind: 'timeout', delayMs: 3000 } as const],
  ])(
    'a TokenReview answered with %s: 503 (the Broker redelivers), then the redelivery passes',
    async (_, fault) => {
      // A token not seen before (a new TokenRequest), so no verdict is cached for it.
      const fresh = new OidcTokenProvider({ kubeConfig: kc, namespace: NS });
      const newToken = await fresh.tokenFor(trigger('force-drift-force'), audienceOf(fn));
      const handle = suite.proxy.addFault({
        ...fault,
        match: { clientTag: fn, resource: 'tokenreviews' },
        times: 1,
      });
      suite.proxy.clearCalls();
      const refused = await withBearer(f.url, newToken);
      expect(refused).toMatchObject({ status: 503, body: { error: 'token review failed' } });
      expect(handle.applied).toBe(1);
      expect(callsBy(fn).map((c) => c.resource)).toEqual(['tokenreviews']);
      // The Broker's next attempt: the API server answers, the event is handled.
      expect((await withBearer(f.url, newToken)).status).toBe(200);
    },
  );
});

describe.each([
  ['surface-stalled', ['surface-stalled-resync']],
  ['heal-external-artifacts', ['heal-external-artifacts-update']],
])('%s with RECOVERY_AUTH=oidc', (fn, senders) => {
  let f: { url: string };
  beforeAll(async () => {
    const start = fn === 'surface-stalled' ? suite.startSurfaceStalled : suite.startHeal;
    f = await start(new SettableClock(T0), { env: authEnv(fn, senders) });
  });

  it('refuses a delivery without a token (no API call), hears its Trigger', async () => {
    suite.proxy.clearCalls();
    expect((await postEvent(f.url, unknownEvent())).status).toBe(401);
    expect(callsBy(fn)).toEqual([]);
    const token = await tokens.tokenFor(trigger(senders[0] as string), audienceOf(fn));
    expect((await withBearer(f.url, token)).status).toBe(200);
    expect(reviewsBy(fn)).toHaveLength(1);
  });
});
