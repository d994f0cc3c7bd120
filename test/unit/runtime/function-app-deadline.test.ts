// Each delivery's signal (ADR 57), over real HTTP: the deadline on the deps clock (here the
// VirtualClock) and the client closing the connection abort it; the delivery then answers 503 at
// once, and nothing the handler sends after the abort leaves the process (the Broker emitter reads
// the delivery's signal, as the API transport does).

import http from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { HTTP } from 'cloudevents';
import { createFunctionApp, type EventHandler } from '../../../shared/runtime/function-app.js';
import { createBrokerEmitter } from '../../../shared/runtime/broker-emitter.js';
import { deliverySignal, ClientClosedError } from '../../../shared/runtime/delivery.js';
import { DeadlineError } from '../../../shared/runtime/clock.js';
import { createLogger } from '../../../shared/runtime/logger.js';
import { handled } from '../../../shared/runtime/outcome.js';
import { VirtualClock } from '../../harness/virtual-clock.js';
import { serve, type Served } from '../../harness/functions/serve.js';
import {
  cloudEvent,
  postEvent,
  startEventSink,
  type EventSink,
} from '../../support/http-events.js';

const DEADLINE_MS = 290_000;
const servers: Served[] = [];
let sink: EventSink | undefined;
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await sink?.close();
});

/** Serves a function app whose handler is `handle`, its deadline on `clock`. */
async function app(clock: VirtualClock, handle: EventHandler): Promise<Served> {
  const served = await serve(
    createFunctionApp({
      logger: createLogger({ name: 'deadline', level: 'silent' }),
      deadline: { clock, ms: DEADLINE_MS },
      handle,
    }),
  );
  servers.push(served);
  return served;
}

/** A handler that waits for its delivery's signal, then tries to emit once; what it saw. */
function waitsForAbort(emitTo: string) {
  const seen: { reason?: unknown; emit?: string } = {};
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  const handle: EventHandler = async () => {
    const signal = deliverySignal();
    if (signal === undefined) throw new Error('no delivery signal');
    started();
    await new Promise<void>((resolve) =>
      signal.addEventListener('abort', () => resolve(), { once: true }),
    );
    seen.reason = signal.reason;
    try {
      await createBrokerEmitter({ url: emitTo }).emit({
        type: 'late',
        source: '/test',
        data: {},
        time: 0,
      });
      seen.emit = 'sent';
    } catch (e) {
      seen.emit = (e as Error).name;
    }
    return handled('too-late');
  };
  return { handle, seen, running };
}

describe("a delivery's signal", () => {
  it('aborts at the deadline on the virtual clock: 503 deadline at once, and the late emit never leaves', async () => {
    sink ??= await startEventSink();
    const clock = new VirtualClock({ start: 0 });
    const { handle, seen, running } = waitsForAbort(sink.url);
    const s = await app(clock, handle);
    const answer = postEvent(s.url, cloudEvent({ type: 'any', data: {} }));
    await running;
    await clock.advance(DEADLINE_MS - 1);
    expect(seen.reason).toBeUndefined();
    await clock.advance(1);
    expect(await answer).toMatchObject({ status: 503, body: { result: 'deadline' } });
    await expect.poll(() => seen.emit).toBe('EmitError');
    expect(seen.reason).toBeInstanceOf(DeadlineError);
    expect(sink.events.filter((e) => e.type === 'late')).toHaveLength(0);
  });

  it('a delivery that ends in time answers its outcome, and its deadline never fires', async () => {
    const clock = new VirtualClock({ start: 0 });
    let signal: AbortSignal | undefined;
    const s = await app(clock, () => {
      signal = deliverySignal();
      return Promise.resolve(handled('done'));
    });
    expect(await postEvent(s.url, cloudEvent({ type: 'any', data: {} }))).toMatchObject({
      status: 200,
      body: { result: 'done' },
    });
    // The deliveries' one timer (delivery-deadlines.ts) may still be armed: it fires for nothing
    // and is not armed again.
    expect(clock.pendingTimers).toBeLessThanOrEqual(1);
    await clock.advance(DEADLINE_MS * 2);
    expect(signal?.aborted).toBe(false);
    expect(clock.pendingTimers).toBe(0);
  });

  it('aborts when the client closes the connection (the Broker giving up): the late emit never leaves', async () => {
    sink ??= await startEventSink();
    const clock = new VirtualClock({ start: 0 });
    const { handle, seen, running } = waitsForAbort(sink.url);
    const s = await app(clock, handle);
    const message = HTTP.binary(cloudEvent({ type: 'any', data: {} }));
    const req = http.request(s.url, {
      method: 'POST',
      headers: message.headers as Record<string, string>,
    });
    req.on('error', () => undefined);
    req.end(String(message.body));
    await running;
    req.destroy();
    await expect.poll(() => seen.emit).toBe('EmitError');
    expect(seen.reason).toBeInstanceOf(ClientClosedError);
    expect(sink.events.filter((e) => e.type === 'late')).toHaveLength(0);
    // The deadline was disarmed with the delivery: the deliveries' timer fires for nothing.
    await clock.advance(DEADLINE_MS * 2);
    expect(seen.reason).toBeInstanceOf(ClientClosedError);
    expect(clock.pendingTimers).toBe(0);
  });
});
