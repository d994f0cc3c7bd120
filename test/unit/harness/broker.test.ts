import { CloudEvent, HTTP } from 'cloudevents';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../harness/knative/broker.js';
import type { BrokerOptions } from '../../harness/knative/broker.js';
import type { AnyEvent } from '../../harness/knative/cloudevent-http.js';
import {
  startEventRecorder,
  type EventRecorder,
  type RecorderAnswer,
} from '../../harness/knative/event-recorder.js';
import type { DeliverySpec, TriggerSpec } from '../../harness/knative/manifests.js';

// ---- a real HTTP subscriber: the harness's event recorder, answering 200 unless told ---------

const subscribers: EventRecorder[] = [];
const brokers: Broker[] = [];

async function subscriber(
  answer: (n: number, event: AnyEvent | undefined) => RecorderAnswer = () => ({ status: 200 }),
): Promise<EventRecorder> {
  const recorder = await startEventRecorder(answer);
  subscribers.push(recorder);
  return recorder;
}

/** The ids of the events `recorder` received, in order. */
const ids = (recorder: EventRecorder): string[] => recorder.events().map((e) => e.id);

afterEach(async () => {
  await Promise.all(brokers.splice(0).map((b) => b.close()));
  const closing = subscribers.splice(0);
  await Promise.all(closing.map((s) => s.close()));
  // Every delivery the broker made was a valid CloudEvent.
  expect(closing.flatMap((s) => s.requests.flatMap((r) => r.error ?? []))).toEqual([]);
});

// ---- broker fixtures --------------------------------------------------------------------------

const NS = 'source-watcher-recovery';

function trigger(
  name: string,
  attributes: Record<string, string>,
  service: string,
  delivery: Partial<DeliverySpec> = {},
): TriggerSpec {
  return {
    namespace: NS,
    name,
    broker: 'default',
    attributes,
    subscriber: { service },
    delivery: { retry: 0, backoffPolicy: 'exponential', backoffDelayMs: 0, ...delivery },
  };
}

async function startBroker(
  triggers: TriggerSpec[],
  subscribers: Record<string, string[]>,
  extra: Partial<BrokerOptions> = {},
): Promise<Broker> {
  const broker = new Broker({
    namespace: NS,
    name: 'default',
    triggers,
    subscribers,
    retryDelayScale: 0,
    ...extra,
  });
  brokers.push(broker);
  await broker.start();
  return broker;
}

/** A broker with one Trigger `t` that sends every test.event to the service `a` at `url`. */
const brokerTo = (
  url: string,
  delivery: Partial<DeliverySpec> = {},
  extra: Partial<BrokerOptions> = {},
): Promise<Broker> =>
  startBroker([trigger('t', { type: 'test.event' }, 'a', delivery)], { a: [url] }, extra);

/** brokerTo with `retry` retries, then the dead-letter sink: the service `dls` at `dlsUrl`. */
const brokerDeadLettering = (url: string, dlsUrl: string, retry: number): Promise<Broker> =>
  startBroker(
    [trigger('t', { type: 'test.event' }, 'a', { retry, deadLetterSink: { service: 'dls' } })],
    { a: [url], dls: [dlsUrl] },
  );

function event(attrs: Record<string, unknown> = {}): CloudEvent<unknown> {
  return new CloudEvent<unknown>({
    type: 'test.event',
    source: '/test',
    datacontenttype: 'application/json',
    data: { hello: 'world' },
    ...attrs,
  });
}

/** Posts the event in Knative's binary or structured HTTP mode; the status answered. */
async function post(mode: 'binary' | 'structured', url: string, ev: CloudEvent<unknown>) {
  const msg = mode === 'binary' ? HTTP.binary(ev) : HTTP.structured(ev);
  const res = await fetch(url, {
    method: 'POST',
    headers: msg.headers as Record<string, string>,
    body: msg.body as string,
  });
  await res.arrayBuffer();
  return res.status;
}

/** A subscriber's 200 answer carrying `ev` in binary mode: a reply the broker re-ingests. */
function replyWith(ev: CloudEvent<unknown>): RecorderAnswer {
  const msg = HTTP.binary(ev);
  return { status: 200, headers: msg.headers as Record<string, string>, body: String(msg.body) };
}

// ---- tests ------------------------------------------------------------------------------------

describe('Broker routing', () => {
  it('routes by exact attribute filters, extensions included, from binary and structured mode', async () => {
    const [a, b, c] = await Promise.all([subscriber(), subscriber(), subscriber()]);
    const broker = await startBroker(
      [
        trigger('by-type', { type: 'test.event' }, 'a'),
        trigger('by-type-and-kind', { type: 'test.event', kind: 'ArtifactGenerator' }, 'b'),
        trigger('other-type', { type: 'other.event' }, 'c'),
        { ...trigger('other-broker', { type: 'test.event' }, 'c'), broker: 'another' },
      ],
      { a: [a.url], b: [b.url], c: [c.url] },
    );

    const withKind = event({ kind: 'ArtifactGenerator' });
    const otherKind = event({ kind: 'PackageSource' });
    const other = event({ type: 'other.event', source: '/elsewhere' });
    expect(await post('binary', broker.ingressUrl, withKind)).toBe(202);
    expect(await post('structured', broker.ingressUrl, otherKind)).toBe(202);
    expect(await post('structured', broker.ingressUrl, other)).toBe(202);
    await broker.idle();

    expect(ids(a).sort()).toEqual([withKind.id, otherKind.id].sort());
    expect(ids(b)).toEqual([withKind.id]);
    expect(ids(c)).toEqual([other.id]);
    // Delivered in binary mode, attributes and data intact, broker TTL not leaked.
    const got = b.requests[0];
    expect(got?.headers['ce-id']).toBe(withKind.id);
    expect(got?.headers['ce-kind']).toBe('ArtifactGenerator');
    expect(got?.headers['ce-knativebrokerttl']).toBeUndefined();
    expect(got?.event?.data).toEqual({ hello: 'world' });
    expect(broker.stats).toMatchObject({
      ingested: 3,
      delivered: { 'by-type': 2, 'by-type-and-kind': 1, 'other-type': 1 },
    });
    expect(broker.ingested.map((r) => r.matched)).toEqual([
      ['by-type', 'by-type-and-kind'],
      ['by-type'],
      ['other-type'],
    ]);
  });

  it('spreads deliveries over replicas round-robin', async () => {
    const [r1, r2] = await Promise.all([subscriber(), subscriber()]);
    const broker = await startBroker([trigger('t', { type: 'test.event' }, 'svc')], {
      svc: [r1.url, r2.url],
    });
    for (let i = 0; i < 4; i++) broker.ingest(event());
    await broker.idle();
    expect(r1.requests).toHaveLength(2);
    expect(r2.requests).toHaveLength(2);
  });

  it('skips a Trigger whose subscriber Service has no replica (not ready)', async () => {
    const a = await subscriber();
    const broker = await startBroker(
      [
        trigger('ready', { type: 'test.event' }, 'a'),
        trigger('unready', { type: 'test.event' }, 'gone'),
      ],
      { a: [a.url] },
    );
    expect(broker.ingest(event())).toEqual(['ready']);
    await broker.idle();
    expect(a.requests).toHaveLength(1);
    expect(broker.stats.unready).toBe(1);
    expect(broker.deliveriesTo('unready')).toEqual([]);
  });
});

describe('Broker ingress refuses what is not a CloudEvent', () => {
  interface Case {
    name: string;
    method: string;
    path?: string;
    headers: Record<string, string>;
    body?: string;
    status: number;
  }
  /** The binary-mode attributes of a CloudEvent. */
  const ce: Record<string, string> = {
    'ce-id': '1',
    'ce-source': '/s',
    'ce-type': 't',
    'ce-specversion': '1.0',
  };
  const without = (attribute: string) =>
    Object.fromEntries(Object.entries(ce).filter(([k]) => k !== attribute));
  /** A POST of `body` with `headers` that the ingress answers 400. */
  const bad = (name: string, headers: Record<string, string>, body: string): Case => ({
    name,
    method: 'POST',
    headers,
    body,
    status: 400,
  });
  const cases: Case[] = [
    bad('binary without ce-type', without('ce-type'), '{}'),
    bad('binary without ce-source', without('ce-source'), '{}'),
    bad('no CloudEvent at all', { 'content-type': 'application/json' }, '{"a":1}'),
    bad(
      'structured with broken JSON',
      { 'content-type': 'application/cloudevents+json' },
      '{"id":',
    ),
    bad(
      'binary JSON data that does not parse',
      { ...ce, 'content-type': 'application/json' },
      '{oops',
    ),
    bad('a batch', { 'content-type': 'application/cloudevents-batch+json' }, '[]'),
    { name: 'GET', method: 'GET', headers: {}, status: 405 },
    {
      name: 'another broker path',
      method: 'POST',
      path: '/other/default',
      headers: ce,
      status: 404,
    },
  ];

  it.each(cases)(
    '$name -> $status, nothing routed',
    async ({ method, path, headers, body, status }) => {
      const a = await subscriber();
      const broker = await startBroker([trigger('all', { specversion: '1.0' }, 'a')], {
        a: [a.url],
      });
      const url = path ? new URL(path, broker.ingressUrl).toString() : broker.ingressUrl;
      const res = await fetch(url, { method, headers, ...(body !== undefined ? { body } : {}) });
      expect(res.status).toBe(status);
      await broker.idle();
      expect(broker.stats.ingested).toBe(0);
      expect(a.requests).toEqual([]);
      expect(broker.stats.rejected).toBe(status === 400 ? 1 : 0);
    },
  );
});

describe('Broker delivery', () => {
  it('redelivers on 503 until the subscriber succeeds', async () => {
    const a = await subscriber((n) => ({ status: n <= 2 ? 503 : 200 }));
    const dls = await subscriber();
    const broker = await brokerDeadLettering(a.url, dls.url, 3);
    const ev = event();
    broker.ingest(ev);
    await broker.idle();
    expect(ids(a)).toEqual([ev.id, ev.id, ev.id]);
    expect(broker.deliveriesTo('t').map((d) => [d.attempt, d.status, d.outcome])).toEqual([
      [1, 503, 'retry'],
      [2, 503, 'retry'],
      [3, 200, 'delivered'],
    ]);
    expect(broker.stats).toMatchObject({ redelivered: 2, deadLettered: 0, delivered: { t: 1 } });
    expect(dls.requests).toEqual([]);
  });

  const statuses: { status: number; attempts: number }[] = [
    { status: 500, attempts: 3 },
    { status: 503, attempts: 3 },
    { status: 404, attempts: 3 },
    { status: 408, attempts: 3 },
    { status: 409, attempts: 3 },
    { status: 429, attempts: 3 },
    { status: 400, attempts: 1 },
    { status: 401, attempts: 1 },
    { status: 403, attempts: 1 },
    { status: 422, attempts: 1 },
    { status: 302, attempts: 1 },
  ];

  it.each(statuses)(
    'status $status: $attempts attempt(s), then dead-lettered with the error extensions',
    async ({ status, attempts }) => {
      const a = await subscriber(() => ({ status, body: `failed with ${status}` }));
      const dls = await subscriber();
      const broker = await brokerDeadLettering(a.url, dls.url, 2);
      const ev = event();
      broker.ingest(ev);
      await broker.idle();
      expect(a.requests).toHaveLength(attempts);
      expect(broker.deadLetters).toHaveLength(1);
      expect(broker.deadLetters[0]).toMatchObject({
        trigger: 't',
        attempts,
        lastStatus: status,
        sink: { url: dls.url, status: 200 },
      });
      expect(dls.requests).toHaveLength(1);
      const dead = dls.events()[0];
      expect(dead?.id).toBe(ev.id);
      expect(dead?.data).toEqual({ hello: 'world' });
      expect(dead?.knativeerrorcode).toBe(String(status));
      expect(dead?.knativeerrordest).toBe(a.url);
      expect(Buffer.from(String(dead?.knativeerrordata), 'base64').toString()).toBe(
        `failed with ${status}`,
      );
      expect(broker.stats).toMatchObject({
        deadLettered: 1,
        redelivered: attempts - 1,
        delivered: { t: 0 },
      });
    },
  );

  it('treats a transport error as redeliverable and dead-letters it with no status', async () => {
    const gone = await subscriber();
    await gone.close(); // the port now refuses connections
    const broker = await brokerTo(gone.url, { retry: 2 });
    broker.ingest(event());
    await broker.idle();
    expect(broker.deliveriesTo('t').map((d) => d.outcome)).toEqual([
      'retry',
      'retry',
      'dead-letter',
    ]);
    expect(broker.deadLetters[0]?.lastStatus).toBeUndefined();
    expect(broker.deadLetters[0]?.lastError).toMatch(/fetch failed|ECONNREFUSED/);
    expect(broker.deadLetters[0]?.sink).toBeUndefined();
  });

  const backoffs: { policy: 'exponential' | 'linear'; gaps: number[] }[] = [
    { policy: 'exponential', gaps: [40, 80] },
    { policy: 'linear', gaps: [0, 40] },
  ];

  it.each(backoffs)('$policy backoff spaces the retries ($gaps ms)', async ({ policy, gaps }) => {
    const a = await subscriber(() => ({ status: 503 }));
    const broker = await brokerTo(
      a.url,
      { retry: 2, backoffPolicy: policy, backoffDelayMs: 40 },
      { retryDelayScale: 1 },
    );
    broker.ingest(event());
    await broker.idle();
    const times = a.requests.map((r) => r.at);
    expect(times).toHaveLength(3);
    const measured = [(times[1] ?? 0) - (times[0] ?? 0), (times[2] ?? 0) - (times[1] ?? 0)];
    expect(measured[0]).toBeGreaterThanOrEqual((gaps[0] ?? 0) - 2);
    expect(measured[1]).toBeGreaterThanOrEqual((gaps[1] ?? 0) - 2);
    expect(measured[1]).toBeLessThan((gaps[1] ?? 0) + 150);
  });

  it('delivers every event twice with duplicateProbability 1', async () => {
    const a = await subscriber();
    const broker = await brokerTo(a.url, {}, { duplicateProbability: 1 });
    const events = [event(), event(), event()];
    for (const ev of events) broker.ingest(ev);
    await broker.idle();
    const counts = new Map<string, number>();
    for (const e of a.events()) counts.set(e.id, (counts.get(e.id) ?? 0) + 1);
    expect([...counts.entries()].sort()).toEqual(events.map((e) => [e.id, 2]).sort());
    expect(broker.stats.duplicated).toBe(3);
    expect(broker.deliveriesTo('t').filter((d) => d.duplicate)).toHaveLength(3);
  });

  it('never duplicates with the default options', async () => {
    const a = await subscriber();
    const broker = await brokerTo(a.url);
    for (let i = 0; i < 5; i++) broker.ingest(event());
    await broker.idle();
    expect(a.requests).toHaveLength(5);
    expect(broker.stats.duplicated).toBe(0);
  });

  it('reorders deliveries with a random extra delay', async () => {
    const a = await subscriber();
    const broker = await brokerTo(a.url, {}, { reorderMaxDelayMs: 60, seed: 7 });
    const sent = Array.from({ length: 12 }, (_, i) => event({ seq: String(i) }));
    for (const ev of sent) broker.ingest(ev);
    await broker.idle();
    const order = a.events().map((e) => String(e.seq));
    expect([...order].sort()).toEqual(sent.map((e) => String(e.seq)).sort());
    expect(order).not.toEqual(sent.map((e) => String(e.seq)));
  });
});

describe('Broker replies', () => {
  it('re-ingests a CloudEvent returned in a 2xx response and routes it to every matching Trigger', async () => {
    const replyEvent = event({ type: 'test.reply', source: '/replier', data: { step: 2 } });
    const replier = await subscriber(() => replyWith(replyEvent));
    const sink = await subscriber();
    const broker = await startBroker(
      [
        trigger('first', { type: 'test.event' }, 'replier'),
        trigger('second', { type: 'test.reply' }, 'sink'),
      ],
      { replier: [replier.url], sink: [sink.url] },
    );
    expect(await post('binary', broker.ingressUrl, event())).toBe(202);
    await broker.idle();
    expect(ids(sink)).toEqual([replyEvent.id]);
    expect(sink.events()[0]?.data).toEqual({ step: 2 });
    expect(broker.stats.replies).toBe(1);
    expect(broker.ingested.map((r) => r.origin)).toEqual(['ingress', 'reply']);
    expect(broker.deliveriesTo('first')[0]?.reply?.id).toBe(replyEvent.id);
  });

  it('does not treat a plain 2xx body as a reply', async () => {
    const a = await subscriber(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"ok":true}',
    }));
    const broker = await brokerTo(a.url);
    broker.ingest(event());
    await broker.idle();
    expect(broker.stats.replies).toBe(0);
    expect(broker.stats.ingested).toBe(1);
  });

  it('ends a reply loop when the broker TTL runs out', async () => {
    // The subscriber answers every event with a new event its own Trigger matches.
    const looper = await subscriber((n) => replyWith(event({ id: `loop-${n}` })));
    const broker = await startBroker(
      [trigger('t', { type: 'test.event' }, 'looper')],
      { looper: [looper.url] },
      { ttl: 12 },
    );
    broker.ingest(event());
    await broker.idle();
    expect(looper.requests).toHaveLength(12);
    expect(broker.stats).toMatchObject({
      replies: 12,
      ttlExpired: 1,
      ingested: 12,
    });
  });
});

describe('Broker idle()', () => {
  it('resolves at once when nothing is pending', async () => {
    const broker = await startBroker([], {});
    const t0 = Date.now();
    await broker.idle();
    expect(Date.now() - t0).toBeLessThan(50);
  });

  it('waits for slow deliveries and their retries', async () => {
    const a = await subscriber((n) => ({ status: n === 1 ? 503 : 200, delayMs: 120 }));
    const broker = await brokerTo(a.url, { retry: 1 });
    expect(await post('binary', broker.ingressUrl, event())).toBe(202);
    const t0 = Date.now();
    await broker.idle();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(200);
    expect(broker.deliveriesTo('t').map((d) => d.outcome)).toEqual(['retry', 'delivered']);
  });

  it('close() abandons pending retries and resolves', async () => {
    const a = await subscriber(() => ({ status: 503 }));
    const broker = await brokerTo(
      a.url,
      { retry: 5, backoffDelayMs: 10_000 },
      { retryDelayScale: 1 },
    );
    broker.ingest(event());
    while (broker.deliveries.length === 0) await new Promise((r) => setTimeout(r, 5));
    const t0 = Date.now();
    await broker.close();
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(a.requests).toHaveLength(1);
    expect(broker.deliveriesTo('t').map((d) => d.outcome)).toEqual(['retry', 'abandoned']);
    expect(broker.stats.deadLettered).toBe(0);
  });
});
