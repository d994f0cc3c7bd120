// A real HTTP CloudEvents receiver for tests: it records every request it gets (parsed event,
// headers, real arrival time) and answers as told (default 202). Stands in for a subscriber
// Service, a dead-letter sink, or a source's sink.

import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MalformedEventError, parseHttpEvent } from './cloudevent-http.js';
import type { AnyEvent } from './cloudevent-http.js';

export interface RecordedRequest {
  headers: IncomingHttpHeaders;
  /** The parsed CloudEvent, or undefined when the request did not carry a valid one. */
  event: AnyEvent | undefined;
  /** Why parsing failed, when it did. */
  error?: string;
  /** Real time of arrival (Date.now()). */
  at: number;
}

export interface RecorderAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Real ms to wait before answering. */
  delayMs?: number;
}

export interface EventRecorder {
  /** Base URL (http://127.0.0.1:<port>/). */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** The valid events received, in arrival order. */
  events(): AnyEvent[];
  close(): Promise<void>;
}

/** The request's whole body. */
async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Starts a recorder on 127.0.0.1. `answer(n, event)` decides the response to the n-th request
 * (1-based, counting every request); a request without a valid CloudEvent is recorded with its
 * parse error and answered 400.
 */
export async function startEventRecorder(
  answer: (n: number, event: AnyEvent | undefined) => RecorderAnswer = () => ({ status: 202 }),
): Promise<EventRecorder> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    void bodyOf(req).then(
      (body) => {
        const rec: RecordedRequest = { headers: req.headers, event: undefined, at: Date.now() };
        try {
          rec.event = parseHttpEvent(req.headers, body);
        } catch (e) {
          rec.error = e instanceof MalformedEventError ? e.message : String(e);
        }
        requests.push(rec);
        const a = rec.event ? answer(requests.length, rec.event) : { status: 400 };
        setTimeout(() => {
          res.writeHead(a.status, a.headers ?? {});
          res.end(a.body ?? '');
        }, a.delayMs ?? 0);
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    requests,
    events: () => requests.flatMap((r) => (r.event ? [r.event] : [])),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
