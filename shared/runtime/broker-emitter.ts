// Posts action events to the Broker with fetch and checks the status. (The SDK's httpTransport
// resolves even on HTTP 500, so it is not used.) Binary mode, one event per request.

import { CloudEvent, HTTP } from 'cloudevents';
import { withDeliverySignal } from './delivery.js';
import { EmitError } from './outcome.js';

export interface OutgoingEvent {
  readonly type: string;
  readonly source: string;
  readonly subject?: string;
  readonly data: unknown;
  /** Epoch ms for the `time` attribute. */
  readonly time: number;
}

export interface Emitter {
  emit(event: OutgoingEvent): Promise<void>;
}

export function createBrokerEmitter(opts: { url: string; timeoutMs?: number }): Emitter {
  const timeoutMs = opts.timeoutMs ?? 5000;
  return {
    async emit(e: OutgoingEvent): Promise<void> {
      const ce = new CloudEvent({
        type: e.type,
        source: e.source,
        ...(e.subject !== undefined ? { subject: e.subject } : {}),
        time: new Date(e.time).toISOString(),
        datacontenttype: 'application/json',
        data: e.data,
      });
      const message = HTTP.binary(ce);
      let response: Response;
      try {
        response = await fetch(opts.url, {
          method: 'POST',
          headers: message.headers as Record<string, string>,
          body: message.body as string,
          // Cut, or never sent, once the delivery it belongs to has ended (delivery.ts).
          signal: withDeliverySignal(AbortSignal.timeout(timeoutMs)),
        });
      } catch (err) {
        throw new EmitError(`emit to broker failed: ${err instanceof Error ? err.name : 'error'}`);
      }
      // Drain the body so the connection can be reused.
      await response.arrayBuffer().catch(() => undefined);
      if (!response.ok) {
        throw new EmitError(`broker answered ${response.status}`, response.status);
      }
    },
  };
}

/** An emitter for when no sink is configured: every emit fails (and the event is redelivered). */
export function missingSinkEmitter(): Emitter {
  return {
    emit(): Promise<void> {
      return Promise.reject(new EmitError('no broker configured: set K_SINK or BROKER_URL'));
    },
  };
}
