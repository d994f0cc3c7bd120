// The in-place retry's rules (shared/kube/in-place-retry.ts, docs/adr/0070), table-driven, on a
// scripted Send (the answers a real API server gives through the fault proxy are proved in
// test/integration/in-place-retry.test.ts) inside a delivery as function-app.ts runs one, its
// waits on a hand-set clock.

import { describe, expect, it } from 'vitest';
import {
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
});
