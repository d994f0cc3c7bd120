// The in-place retry's rules (shared/kube/in-place-retry.ts, docs/adr/0070 and 0071), table-driven, on a
// scripted Send (the answers a real API server gives through the fault proxy are proved in
// test/integration/in-place-retry.test.ts) inside a delivery as function-app.ts runs one, its
// waits on a hand-set clock.

import { describe, expect, it } from 'vitest';
import {
  isRepeatable,
  MAX_RETRIES,
  MAX_WAIT_MS,
  retryWaitMs,
  retryingInPlace,
} from '../../../shared/kube/in-place-retry.js';
import type { HttpOutcome, HttpRequest, Send } from '../../../shared/kube/transport.js';
import { DeliveryControl, inDelivery } from '../../../shared/runtime/delivery.js';
import { SettableClock } from '../../harness/functions/test-deps.js';

const ok: HttpOutcome = { kind: 'response', statusCode: 200, body: '{}' };
const status = (statusCode: number, retryAfterSeconds?: number): HttpOutcome => ({
  kind: 'response',
  statusCode,
  body: '{}',
  ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
});
const GET: HttpRequest = { method: 'GET', path: '/api/v1/namespaces/a/things/b' };
const PATCH: HttpRequest = { method: 'PATCH', path: '/api/v1/namespaces/a/things/b', body: {} };
const POST: HttpRequest = { method: 'POST', path: '/api/v1/namespaces/a/events', body: {} };
/** A write with a resourceVersion precondition: its second send answers 409 once the first ran. */
const PATCH_RV: HttpRequest = {
  method: 'PATCH',
  path: '/api/v1/namespaces/a/things/b',
  body: { metadata: { annotations: { x: '1' }, resourceVersion: '42' } },
};
/** A create that names its object: its second send answers 409 AlreadyExists. */
const POST_NAMED: HttpRequest = {
  method: 'POST',
  path: '/api/v1/namespaces/a/events',
  body: { metadata: { name: 'ag.1' } },
};
const DELETE_RV: HttpRequest = {
  method: 'DELETE',
  path: '/api/v1/namespaces/a/things/b',
  body: { preconditions: { uid: 'u', resourceVersion: '42' } },
};

describe('isRepeatable: sending it twice leaves what sending it once leaves', () => {
  it.each<[string, Pick<HttpRequest, 'method' | 'body' | 'once'>, boolean]>([
    ['a read', GET, true],
    ['a create naming its object', POST_NAMED, true],
    ['a patch with a resourceVersion precondition', PATCH_RV, true],
    ['a delete with a resourceVersion precondition', DELETE_RV, true],
    [
      'a status patch with a resourceVersion precondition',
      { method: 'PATCH', body: { metadata: { resourceVersion: '7' }, status: { conditions: [] } } },
      true,
    ],
    ['a patch without a precondition', PATCH, false],
    [
      'a patch with an empty resourceVersion',
      { method: 'PATCH', body: { metadata: { resourceVersion: '' } } },
      false,
    ],
    [
      'a patch with a numeric resourceVersion',
      { method: 'PATCH', body: { metadata: { resourceVersion: 42 } } },
      false,
    ],
    ['a patch whose body is a JSON patch array', { method: 'PATCH', body: [{ op: 'add' }] }, false],
    ['a create without a name', POST, false],
    [
      'an Event create (once: its AlreadyExists would count a second occurrence)',
      { method: 'POST', body: { metadata: { name: 'ag.0123456789abcdef' } }, once: true },
      false,
    ],
    [
      'a create with generateName',
      { method: 'POST', body: { metadata: { name: 'x', generateName: 'x-' } } },
      false,
    ],
    [
      'a review (TokenReview: no metadata)',
      {
        method: 'POST',
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token: 't' } },
      },
      false,
    ],
    [
      'a delete without preconditions',
      { method: 'DELETE', body: { propagationPolicy: 'Background' } },
      false,
    ],
    [
      'a delete with a uid precondition only',
      { method: 'DELETE', body: { preconditions: { uid: 'u' } } },
      false,
    ],
    ['a delete without a body', { method: 'DELETE' }, false],
  ])('%s: %s', (_name, req, expected) => {
    expect(isRepeatable(req)).toBe(expected);
  });
});

describe('retryWaitMs: which failure is tried again in place, after how long', () => {
  it.each<[string, HttpRequest, HttpOutcome, number | undefined]>([
    ['a read after 500', GET, status(500), 0],
    ['a read after 503', GET, status(503), 0],
    ['a read after 429 without Retry-After', GET, status(429), 0],
    ['a read after 408', GET, status(408), 0],
    ['a read after a timeout', GET, { kind: 'timeout', timeoutMs: 10_000 }, 0],
    ['a read after a cut connection', GET, { kind: 'transport', message: 'socket hang up' }, 0],
    ['a read after 429, Retry-After 1', GET, status(429, 1), 1000],
    ['a read after 429, Retry-After 0', GET, status(429, 0), 0],
    ['a patch after 429, Retry-After 1', PATCH, status(429, 1), 1000],
    ['a create after 429, Retry-After 2', POST, status(429, 2), 2000],
    ['a patch after 503, Retry-After 1', PATCH, status(503, 1), 1000],
    ['a patch after 500 (it may have run)', PATCH, status(500), undefined],
    ['a preconditioned patch after 500', PATCH_RV, status(500), 0],
    ['a preconditioned patch after a timeout', PATCH_RV, { kind: 'timeout', timeoutMs: 1 }, 0],
    ['a preconditioned delete after 503', DELETE_RV, status(503), 0],
    [
      'a named create after a cut connection',
      POST_NAMED,
      { kind: 'transport', message: 'EPIPE' },
      0,
    ],
    ['a preconditioned patch after 409 (the answer itself)', PATCH_RV, status(409), undefined],
    ['a create after 429 without Retry-After', POST, status(429), undefined],
    [
      'a patch after a timeout (it may have run)',
      PATCH,
      { kind: 'timeout', timeoutMs: 1 },
      undefined,
    ],
    [
      'a create after a cut connection',
      POST,
      { kind: 'transport', message: 'ECONNRESET' },
      undefined,
    ],
    ['a read after 429, Retry-After above the bound', GET, status(429, 6), undefined],
    ['a read after 404', GET, status(404), undefined],
    ['a patch after 409', PATCH, status(409), undefined],
    ['a read after 403', GET, status(403), undefined],
    ['a read after 422', GET, status(422), undefined],
    ['a read the delivery cut', GET, { kind: 'aborted' }, undefined],
    ['a read without credentials', GET, { kind: 'credentials' }, undefined],
    ['a read answered 200', GET, ok, undefined],
  ])('%s', (_name, req, outcome, expected) => {
    expect(retryWaitMs(req, outcome)).toBe(expected);
  });

  it('the bound is inclusive: a Retry-After of exactly MAX_WAIT_MS is sat out', () => {
    expect(retryWaitMs(GET, status(429, MAX_WAIT_MS / 1000))).toBe(MAX_WAIT_MS);
  });

  it.each<[string, HttpRequest, HttpOutcome, number | undefined]>([
    ['a read after 500', GET, status(500), undefined],
    ['a read after a timeout', GET, { kind: 'timeout', timeoutMs: 1 }, undefined],
    ['a preconditioned patch after 500', PATCH_RV, status(500), undefined],
    ['a read after 429, Retry-After 1', GET, status(429, 1), 1000],
    ['a patch after 503, Retry-After 2', PATCH, status(503, 2), 2000],
    ['a read after 429, Retry-After above the bound', GET, status(429, 6), undefined],
  ])(
    'before the delivery has an answer, only a Retry-After counts: %s',
    (_n, req, outcome, expected) => {
      expect(retryWaitMs(req, outcome, MAX_WAIT_MS, true)).toBe(expected);
    },
  );
});

/** A Send answering from `script` in order (the last answer repeats); the requests it saw. */
function scripted(script: HttpOutcome[]): { send: Send; sent: HttpRequest[] } {
  const sent: HttpRequest[] = [];
  const send: Send = (req) => {
    sent.push(req);
    return Promise.resolve(script[Math.min(sent.length - 1, script.length - 1)] ?? ok);
  };
  return { send, sent };
}

/** Lets pending promise callbacks run (the wrapper awaits between steps). */
const ticks = async (n = 5): Promise<void> => {
  for (let i = 0; i < n; i++) await Promise.resolve();
};

/**
 * One delivery: a read answered, then a patch refused with 429 and Retry-After: 1, on a hand-set
 * clock; returned once the wrapper sits out the wait.
 */
async function readThenPatchRefused() {
  const clock = new SettableClock(0);
  const { send, sent } = scripted([ok, status(429, 1), ok]);
  const retrying = retryingInPlace(send, { clock });
  const delivery = new DeliveryControl();
  const answers = inDelivery(delivery, async () => [await retrying(GET), await retrying(PATCH)]);
  await ticks(20);
  return { clock, sent, delivery, answers };
}

describe('retryingInPlace inside a delivery', () => {
  it.each<[string, HttpOutcome[], HttpRequest[], number, HttpOutcome['kind'] | number]>([
    // [name, answers in order, the delivery's calls, requests sent, the last call's answer]
    [
      'a read failing after an answered call is tried again: 3 requests, 200',
      [ok, status(500), ok],
      [GET, GET],
      3,
      200,
    ],
    [
      'the first call failing is not (the redelivery costs no more)',
      [status(500), ok],
      [GET],
      1,
      500,
    ],
    [
      'the first call refused with Retry-After 0 is sent again (the server named its moment)',
      [status(429, 0), ok],
      [GET],
      2,
      200,
    ],
    [
      'a preconditioned write failing with 500 after an answered call is sent again',
      [ok, status(500), ok],
      [GET, PATCH_RV],
      3,
      200,
    ],
    [
      'a preconditioned write whose first send ran: the second answers 409, and that is the answer',
      [ok, status(500), status(409)],
      [GET, PATCH_RV],
      3,
      409,
    ],
    [
      'a write failing with 500 after an answered call is not',
      [ok, status(500), ok],
      [GET, PATCH],
      2,
      500,
    ],
    [
      'a read failing twice is tried again once',
      [ok, status(500), status(500), ok],
      [GET, GET],
      3,
      500,
    ],
    [
      'a 404 is an answer: the read after it is tried again',
      [status(404), status(503), ok],
      [GET, GET],
      3,
      200,
    ],
  ])('%s', async (_name, script, calls, requests, last) => {
    const { send, sent } = scripted(script);
    const retrying = retryingInPlace(send, { clock: new SettableClock(0) });
    const outcomes = await inDelivery(new DeliveryControl(), async () => {
      const out: HttpOutcome[] = [];
      for (const c of calls) out.push(await retrying(c));
      return out;
    });
    expect(sent).toHaveLength(requests);
    const final = outcomes[outcomes.length - 1];
    expect(final?.kind === 'response' ? final.statusCode : final?.kind).toBe(last);
  });

  it(`uses at most ${MAX_RETRIES} retries per delivery`, async () => {
    // One answered call, then every read fails: the first MAX_RETRIES failures are retried.
    const { send, sent } = scripted([ok, status(500)]);
    const retrying = retryingInPlace(send, { clock: new SettableClock(0) });
    await inDelivery(new DeliveryControl(), async () => {
      for (let i = 0; i < 5; i++) await retrying(GET);
    });
    expect(sent).toHaveLength(5 + MAX_RETRIES);
  });

  it('outside a delivery nothing is retried', async () => {
    const { send, sent } = scripted([ok, status(500), ok]);
    const retrying = retryingInPlace(send, { clock: new SettableClock(0) });
    await retrying(GET);
    expect((await retrying(GET)).kind === 'response').toBe(true);
    expect(sent).toHaveLength(2);
  });

  it("sits out a 429's Retry-After on the function's clock, then sends the call again", async () => {
    const { clock, sent, answers } = await readThenPatchRefused();
    expect(sent).toHaveLength(2);
    expect(clock.pendingDeadlines).toBe(1);
    clock.advance(999);
    await ticks(20);
    expect(sent).toHaveLength(2);
    clock.advance(1);
    const [, patched] = await answers;
    expect(sent.map((r) => r.method)).toEqual(['GET', 'PATCH', 'PATCH']);
    expect(patched).toEqual(ok);
    expect(clock.pendingDeadlines).toBe(0);
  });

  it('a delivery that ends during the wait answers aborted and sends nothing more', async () => {
    const { clock, sent, delivery, answers } = await readThenPatchRefused();
    delivery.abort(new Error('deadline'));
    const [, patched] = await answers;
    expect(patched).toEqual({ kind: 'aborted' });
    expect(clock.pendingDeadlines).toBe(0);
    clock.advance(5_000);
    await ticks(20);
    expect(sent).toHaveLength(2);
  });

  describe('a call sent beside another, failing before the other answered', () => {
    /**
     * One delivery sending `first` and `second` at once through the retry, on a Send whose
     * answers the test gives call by call (in the order sent); `answered[i]` is call i's outcome
     * once it has one.
     */
    function beside(first: HttpRequest, second: HttpRequest, delivery = new DeliveryControl()) {
      const pending: { req: HttpRequest; answer: (o: HttpOutcome) => void }[] = [];
      const send: Send = (req) =>
        new Promise<HttpOutcome>((resolve) => pending.push({ req, answer: resolve }));
      const retrying = retryingInPlace(send, { clock: new SettableClock(0) });
      const answered: (HttpOutcome | undefined)[] = [undefined, undefined];
      const both = inDelivery(delivery, () =>
        Promise.all(
          [first, second].map((req, i) =>
            retrying(req).then((o) => {
              answered[i] = o;
              return o;
            }),
          ),
        ),
      );
      return { pending, answered, both, delivery };
    }

    it('waits for its sibling; the sibling answered, it is tried again at once', async () => {
      const { pending, both } = beside(GET, GET);
      await ticks();
      expect(pending).toHaveLength(2);
      pending[1]?.answer(status(500)); // the history read fails first
      await ticks();
      expect(pending).toHaveLength(2); // nothing sent while the sibling is out
      pending[0]?.answer(ok); // the AG read answers: the server is not out
      await ticks(20);
      expect(pending).toHaveLength(3);
      pending[2]?.answer(ok);
      expect(await both).toEqual([ok, ok]);
    });

    it('both failing: neither is tried again (an outage costs no more than the redelivery)', async () => {
      const { pending, both } = beside(GET, GET);
      await ticks();
      pending[1]?.answer(status(500));
      await ticks();
      pending[0]?.answer({ kind: 'timeout', timeoutMs: 10_000 });
      const [first, second] = await both;
      expect(first?.kind).toBe('timeout');
      expect(second).toEqual(status(500));
      expect(pending).toHaveLength(2);
    });

    it('a write without a precondition does not wait and is not tried again', async () => {
      const { pending, answered, both } = beside(GET, PATCH);
      await ticks();
      pending[1]?.answer(status(500));
      await ticks(20);
      expect(answered[1]).toEqual(status(500)); // answered before its sibling
      pending[0]?.answer(ok);
      await both;
      expect(pending).toHaveLength(2);
    });

    it('the delivery ending while it waits: it answers its failure and nothing more is sent', async () => {
      const { pending, answered, both, delivery } = beside(GET, GET);
      await ticks();
      pending[1]?.answer(status(503));
      await ticks();
      expect(answered[1]).toBeUndefined();
      delivery.abort(new Error('deadline'));
      await ticks(20);
      expect(answered[1]).toEqual(status(503));
      pending[0]?.answer(ok);
      await both;
      expect(pending).toHaveLength(2);
    });
  });
});
