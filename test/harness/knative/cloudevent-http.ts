// CloudEvents over HTTP for the emulation, on the cloudevents SDK (v10): parse a request or a
// reply (binary or structured mode, validated), and POST an event in binary mode with fetch
// (the SDK's own transport resolves even on HTTP 500, so it is not used).

import { CloudEvent, HTTP, ValidationError } from 'cloudevents';
import type { CloudEventV1 } from 'cloudevents';

export type AnyEvent = CloudEvent<unknown>;

/** Headers as node:http or fetch give them. */
export type HeaderBag = Record<string, string | string[] | undefined>;

export class MalformedEventError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MalformedEventError';
  }
}

function lower(headers: HeaderBag): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

/** True when the headers carry a CloudEvent (binary ce-id, or a structured/batch content type). */
export function carriesEvent(headers: HeaderBag): boolean {
  const h = lower(headers);
  return (
    h['ce-id'] !== undefined || (h['content-type'] ?? '').startsWith('application/cloudevents')
  );
}

/**
 * Parses one CloudEvent from an HTTP message and validates it (the SDK does not validate binary
 * mode by itself). Batches are refused. Throws MalformedEventError with the reason.
 */
export function parseHttpEvent(headers: HeaderBag, body: Buffer): AnyEvent {
  const h = lower(headers);
  const contentType = h['content-type'] ?? '';
  if (contentType.startsWith('application/cloudevents-batch')) {
    throw new MalformedEventError('batched CloudEvents are not accepted');
  }
  const structured = contentType.startsWith('application/cloudevents');
  const textual = structured || /json|^text\//.test(contentType) || contentType === '';
  const payload: string | Buffer | undefined =
    body.length === 0 ? undefined : textual ? body.toString('utf8') : body;
  let parsed: CloudEventV1<unknown> | CloudEventV1<unknown>[];
  try {
    parsed = HTTP.toEvent({ headers: h, body: payload });
  } catch (e) {
    throw new MalformedEventError(`not a CloudEvent: ${describe(e)}`, { cause: e });
  }
  if (Array.isArray(parsed)) throw new MalformedEventError('batched CloudEvents are not accepted');
  const event = parsed as AnyEvent;
  try {
    event.validate();
  } catch (e) {
    throw new MalformedEventError(`invalid CloudEvent: ${describe(e)}`, { cause: e });
  }
  return event;
}

function describe(e: unknown): string {
  if (e instanceof ValidationError) {
    const details = (e.errors ?? []).map((x) => (typeof x === 'string' ? x : JSON.stringify(x)));
    return details.length > 0 ? `${e.message} (${details.join('; ')})` : e.message;
  }
  return e instanceof Error ? e.message : String(e);
}

/** Copies an event with some attributes set (string) or removed (undefined). */
export function withAttributes(
  event: AnyEvent,
  changes: Record<string, string | undefined>,
): AnyEvent {
  const plain: Record<string, unknown> = { ...event };
  if (plain.data_base64 !== undefined) delete plain.data;
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined) delete plain[k];
    else plain[k] = v;
  }
  return new CloudEvent(plain);
}

export interface HttpOutcome {
  /** HTTP status, or undefined when the request failed before a response (transport error). */
  status: number | undefined;
  /** Transport error message, when status is undefined. */
  error?: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** POSTs the event in binary mode; never throws (transport errors come back as an outcome). */
export async function postBinary(
  url: string,
  event: AnyEvent,
  opts: { timeoutMs?: number; signal?: AbortSignal; bearer?: string } = {},
): Promise<HttpOutcome> {
  const message = HTTP.binary(event);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(message.headers)) {
    if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
  }
  // OIDC (docs/adr/0056): the sender's token, as Knative's dispatcher sets it.
  if (opts.bearer !== undefined) headers['authorization'] = `Bearer ${opts.bearer}`;
  const body = message.body;
  const signals: AbortSignal[] = [];
  if (opts.signal) signals.push(opts.signal);
  if (opts.timeoutMs !== undefined && opts.timeoutMs > 0) {
    signals.push(AbortSignal.timeout(opts.timeoutMs));
  }
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers,
      body:
        body === undefined || body === null
          ? null
          : typeof body === 'string'
            ? body
            : ArrayBuffer.isView(body)
              ? new Uint8Array(body.buffer, body.byteOffset, body.byteLength)
              : JSON.stringify(body),
      redirect: 'manual',
      ...(signals.length > 0 ? { signal: AbortSignal.any(signals) } : {}),
    });
    const resHeaders: Record<string, string> = {};
    res.headers.forEach((v, k) => (resHeaders[k] = v));
    const resBody = Buffer.from(await res.arrayBuffer());
    return { status: res.status, headers: resHeaders, body: resBody };
  } catch (e) {
    return {
      status: undefined,
      error: e instanceof Error ? `${e.name}: ${e.message}` : String(e),
      headers: {},
      body: Buffer.alloc(0),
    };
  }
}
