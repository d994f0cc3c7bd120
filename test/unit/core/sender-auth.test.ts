import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  bearerToken,
  cacheUntil,
  ExpiringLru,
  functionAudience,
  parseSenderAuthConfig,
  precheck,
  reviewVerdict,
  senderAllowed,
  unverifiedClaims,
} from '../../../shared/core/access/sender-auth.js';

const AUD = 'source-watcher-recovery.cozystack.io/detect';

/** An unsigned compact JWS with this payload (the signature is never looked at here). */
function jwt(payload: unknown): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64url');
  return `${b64('{"alg":"RS256"}')}.${b64(JSON.stringify(payload))}.c2ln`;
}

describe('parseSenderAuthConfig', () => {
  it.each([
    [{}, { mode: 'off', audience: undefined, allowedSenders: [], sinkTokenFile: undefined }, []],
    [
      { RECOVERY_AUTH: 'oidc', K_SERVICE: 'Detect' },
      { mode: 'oidc', audience: AUD, allowedSenders: [], sinkTokenFile: '/oidc/token' },
      [],
    ],
    [
      {
        RECOVERY_AUTH: 'OIDC',
        RECOVERY_AUTH_AUDIENCE: 'my-aud',
        K_SERVICE: 'detect',
        RECOVERY_AUTH_SINK_TOKEN_FILE: '/var/run/t',
      },
      { mode: 'oidc', audience: 'my-aud', allowedSenders: [], sinkTokenFile: '/var/run/t' },
      [],
    ],
    [
      {
        RECOVERY_AUTH: 'oidc',
        K_SERVICE: 'detect',
        RECOVERY_AUTH_SENDERS: ' system:serviceaccount:ns:a , system:serviceaccount:ns:b-* ',
      },
      {
        mode: 'oidc',
        audience: AUD,
        allowedSenders: ['system:serviceaccount:ns:a', 'system:serviceaccount:ns:b-*'],
        sinkTokenFile: '/oidc/token',
      },
      [],
    ],
    // Bare ServiceAccount names are the install namespace's (docs/adr/0068); full usernames stay.
    [
      {
        RECOVERY_AUTH: 'oidc',
        K_SERVICE: 'detect',
        RECOVERY_AUTH_SENDERS:
          'detect-resync-oidc-eventing.knative.dev-trigger, b-*,system:serviceaccount:other:c',
      },
      {
        mode: 'oidc',
        audience: AUD,
        allowedSenders: [
          'system:serviceaccount:source-watcher-recovery:detect-resync-oidc-eventing.knative.dev-trigger',
          'system:serviceaccount:source-watcher-recovery:b-*',
          'system:serviceaccount:other:c',
        ],
        sinkTokenFile: '/oidc/token',
      },
      [],
    ],
  ])('%j', (env, config, problems) => {
    expect(parseSenderAuthConfig(env, 'source-watcher-recovery')).toEqual({ config, problems });
  });

  it('a bare name follows the namespace the function runs in', () => {
    const env = { RECOVERY_AUTH_SENDERS: 'detect-resync-oidc-eventing.knative.dev-trigger' };
    expect(
      parseSenderAuthConfig(env, 'cozy-source-watcher-recovery').config.allowedSenders,
    ).toEqual([
      'system:serviceaccount:cozy-source-watcher-recovery:detect-resync-oidc-eventing.knative.dev-trigger',
    ]);
  });

  it.each([
    [{ RECOVERY_AUTH: 'yes' }, /RECOVERY_AUTH="yes": expected off or oidc/],
    [{ RECOVERY_AUTH: 'oidc' }, /needs the audience/],
    [{ RECOVERY_AUTH: 'oidc', RECOVERY_AUTH_AUDIENCE: 'a,b' }, /one audience/],
    [{ RECOVERY_AUTH_SENDERS: '*' }, /would allow anyone/],
    [{ RECOVERY_AUTH_SENDERS: 'system:*:x' }, /trailing \*/],
    [{ RECOVERY_AUTH_SENDERS: 'Detect_Resync' }, /neither a username nor a ServiceAccount name/],
    [{ RECOVERY_AUTH_SENDERS: '-x' }, /neither a username nor a ServiceAccount name/],
    [{ RECOVERY_AUTH_SINK_TOKEN_FILE: 'oidc/token' }, /absolute path/],
  ])('%j is refused', (env, message) => {
    const { problems } = parseSenderAuthConfig(env, 'ns');
    expect(problems.join('\n')).toMatch(message);
  });

  it('the audience names the function, lower case, and no namespace (ADR 68)', () => {
    expect(functionAudience('Force-Drift')).toBe(
      'source-watcher-recovery.cozystack.io/force-drift',
    );
    const a = parseSenderAuthConfig({ RECOVERY_AUTH: 'oidc', K_SERVICE: 'detect' }, 'ns-a');
    const b = parseSenderAuthConfig({ RECOVERY_AUTH: 'oidc', K_SERVICE: 'detect' }, 'ns-b');
    expect(a.config.audience).toBe('source-watcher-recovery.cozystack.io/detect');
    expect(b.config.audience).toBe(a.config.audience);
    // What refuses another install's token: the senders, qualified by each one's namespace.
    const senders = { RECOVERY_AUTH_SENDERS: 'detect-resync-oidc-eventing.knative.dev-trigger' };
    const inA = parseSenderAuthConfig({ ...senders, RECOVERY_AUTH: 'oidc' }, 'ns-a').config;
    const inB = parseSenderAuthConfig({ ...senders, RECOVERY_AUTH: 'oidc' }, 'ns-b').config;
    expect(inA.allowedSenders).not.toEqual(inB.allowedSenders);
  });
});

describe('bearerToken', () => {
  it.each([
    [undefined, { kind: 'missing' }],
    ['', { kind: 'missing' }],
    ['Bearer abc.def.ghi', { kind: 'token', token: 'abc.def.ghi' }],
    ['bearer   abc', { kind: 'token', token: 'abc' }],
    ['Basic dXNlcjpwdw==', { kind: 'malformed' }],
    ['Bearer', { kind: 'malformed' }],
    ['Bearer a b', { kind: 'malformed' }],
    ['Bearer a"b', { kind: 'malformed' }],
    [['Bearer a', 'Bearer b'], { kind: 'malformed' }],
    [`Bearer ${'a'.repeat(9000)}`, { kind: 'malformed' }],
  ])('%j', (header, want) => {
    expect(bearerToken(header)).toEqual(want);
  });
});

describe('unverifiedClaims and precheck', () => {
  const now = 1_800_000_000_000;
  const exp = now / 1000 + 3600;

  it('reads exp and aud (string or list)', () => {
    expect(unverifiedClaims(jwt({ exp, aud: AUD }))).toEqual({
      expMs: exp * 1000,
      audiences: [AUD],
    });
    expect(unverifiedClaims(jwt({ exp, aud: ['x', AUD, 7] }))?.audiences).toEqual(['x', AUD]);
  });

  it.each([
    ['not a jwt', 'malformed token'],
    ['a.b', 'malformed token'],
    [`x.${Buffer.from('[1]').toString('base64url')}.y`, 'malformed token'],
    [`x.${Buffer.from('{"exp":').toString('base64url')}.y`, 'malformed token'],
    [`x.%%%.y`, 'malformed token'],
    [jwt({ aud: AUD }), 'token without expiry'],
    [jwt({ exp: now / 1000 - 31, aud: AUD }), 'expired token'],
    [jwt({ exp, aud: 'serving.knative.dev/service/other/detect' }), 'wrong audience'],
    [jwt({ exp, aud: [] }), 'wrong audience'],
  ])('%s -> %s', (token, reason) => {
    expect(precheck(unverifiedClaims(token), AUD, now)).toBe(reason);
  });

  it('passes a well-formed, unexpired token for the audience to the API server', () => {
    expect(precheck(unverifiedClaims(jwt({ exp, aud: AUD })), AUD, now)).toBeUndefined();
    // Within the leeway for a clock ahead of the API server's: the API server decides.
    expect(
      precheck(unverifiedClaims(jwt({ exp: now / 1000 - 10, aud: AUD })), AUD, now),
    ).toBeUndefined();
  });

  it('never throws, whatever the token', () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        const claims = unverifiedClaims(s);
        expect([
          'malformed token',
          'token without expiry',
          'expired token',
          'wrong audience',
          undefined,
        ]).toContain(precheck(claims, AUD, now));
      }),
    );
  });
});

describe('reviewVerdict and senderAllowed', () => {
  const sa =
    'system:serviceaccount:source-watcher-recovery:detect-ag-add-oidc-eventing.knative.dev-trigger';
  it.each([
    [
      { authenticated: false, username: undefined, audiences: [] },
      [],
      { ok: false, status: 401, reason: 'token rejected' },
    ],
    [
      { authenticated: true, username: '', audiences: [AUD] },
      [],
      { ok: false, status: 401, reason: 'token rejected' },
    ],
    [
      { authenticated: true, username: sa, audiences: [] },
      [],
      { ok: false, status: 401, reason: 'wrong audience' },
    ],
    [{ authenticated: true, username: sa, audiences: [AUD] }, [], { ok: true, username: sa }],
    [{ authenticated: true, username: sa, audiences: [AUD] }, [sa], { ok: true, username: sa }],
    [
      { authenticated: true, username: sa, audiences: [AUD] },
      ['system:serviceaccount:source-watcher-recovery:detect-*'],
      { ok: true, username: sa },
    ],
    [
      { authenticated: true, username: 'system:serviceaccount:tenant:evil', audiences: [AUD] },
      [sa],
      { ok: false, status: 403, reason: 'sender not allowed' },
    ],
  ])('%j with %j', (review, allowed, want) => {
    expect(reviewVerdict(review, AUD, allowed)).toEqual(want);
  });

  it('a pattern is a prefix only before a trailing *', () => {
    expect(senderAllowed('ab', ['a*'])).toBe(true);
    expect(senderAllowed('ab', ['a'])).toBe(false);
    expect(senderAllowed('a*', ['a*'])).toBe(true);
  });
});

describe('ExpiringLru and cacheUntil', () => {
  it('keeps an entry until its time, never past it', () => {
    const c = new ExpiringLru<string>(4);
    c.set('k', 'v', 1000, 0);
    expect(c.get('k', 999)).toBe('v');
    expect(c.get('k', 1000)).toBeUndefined();
    expect(c.size).toBe(0);
    c.set('dead', 'v', 5, 10);
    expect(c.size).toBe(0);
  });

  it('evicts the least recently used beyond its size', () => {
    const c = new ExpiringLru<number>(2);
    c.set('a', 1, 100, 0);
    c.set('b', 2, 100, 0);
    expect(c.get('a', 1)).toBe(1); // a is now the most recent
    c.set('c', 3, 100, 1);
    expect(c.get('b', 2)).toBeUndefined();
    expect(c.get('a', 2)).toBe(1);
    expect(c.get('c', 2)).toBe(3);
  });

  it('holds at most maxEntries, whatever the sequence', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string({ maxLength: 3 }), fc.nat(50))), (ops) => {
        const c = new ExpiringLru<number>(3);
        for (const [k, until] of ops) c.set(k, 1, until, 10);
        expect(c.size).toBeLessThanOrEqual(3);
      }),
    );
  });

  it('answers as a plain least-recently-used list would, whatever the gets and sets', () => {
    // The model: keys oldest first; a hit or a set moves its key to the end.
    type Op = readonly ['get' | 'set', string, number];
    const op = fc.tuple(
      fc.constantFrom('get' as const, 'set' as const),
      fc.constantFrom('a', 'b', 'c', 'd'),
      // Mostly long lives, so entries are evicted by their use, not only by their time.
      fc.oneof(fc.nat(5), fc.integer({ min: 50, max: 200 })),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops: readonly Op[]) => {
        const c = new ExpiringLru<number>(3);
        const model: { key: string; value: number; until: number }[] = [];
        ops.forEach(([kind, key, n], i) => {
          const now = i;
          const at = model.findIndex((e) => e.key === key);
          if (kind === 'set') {
            if (at >= 0) model.splice(at, 1);
            if (now + n > now) model.push({ key, value: i, until: now + n });
            while (model.length > 3) model.shift();
            c.set(key, i, now + n, now);
            return;
          }
          let want: number | undefined;
          if (at >= 0) {
            const [e] = model.splice(at, 1);
            if (e !== undefined && e.until > now) {
              model.push(e);
              want = e.value;
            }
          }
          expect(c.get(key, now)).toBe(want);
        });
      }),
      { numRuns: 500 },
    );
  });

  it('a verdict lives until the token expires, capped', () => {
    expect(cacheUntil({ expMs: 5000, audiences: [] }, 1000, 60_000)).toBe(5000);
    expect(cacheUntil({ expMs: 500_000, audiences: [] }, 1000, 60_000)).toBe(61_000);
  });
});
