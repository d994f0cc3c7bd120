// Turns an HTTP request into one validated CloudEvent, or a clear 4xx. Binary and structured mode
// are accepted; batch mode is rejected. The SDK does not validate binary-mode events, so this does.

import { HTTP, type CloudEventV1 } from 'cloudevents';
import type { IncomingHttpHeaders } from 'node:http';

export class HttpInputError extends Error {
  constructor(
    readonly status: 400 | 413 | 415,
    message: string,
  ) {
    super(message);
    this.name = 'HttpInputError';
  }
}

export interface IncomingEvent {
  readonly id: string;
  readonly type: string;
  readonly source: string;
  readonly subject: string | undefined;
  readonly mode: 'binary' | 'structured';
  readonly data: unknown;
  /** Extension attributes (for example the ApiServerSource's kind, name, namespace). */
  readonly extensions: Readonly<Record<string, unknown>>;
}

/** Context attributes and data: everything else on an event is an extension. */
export const CORE_ATTRIBUTES: ReadonlySet<string> = new Set([
  'id',
  'type',
  'source',
  'specversion',
  'subject',
  'time',
  'datacontenttype',
  'dataschema',
  'data',
  'data_base64',
]);

export function parseCloudEvent(headers: IncomingHttpHeaders, body: Buffer): IncomingEvent {
  const contentType = String(headers['content-type'] ?? '').toLowerCase();
  let mode: IncomingEvent['mode'];
  if (contentType.startsWith('application/cloudevents-batch')) {
    throw new HttpInputError(400, 'batch mode is not supported: send one CloudEvent per request');
  } else if (contentType.startsWith('application/cloudevents')) {
    if (!contentType.startsWith('application/cloudevents+json')) {
      throw new HttpInputError(415, 'structured mode must be application/cloudevents+json');
    }
    mode = 'structured';
  } else if (headers['ce-specversion'] !== undefined || headers['ce-id'] !== undefined) {
    mode = 'binary';
  } else {
    throw new HttpInputError(
      400,
      'not a CloudEvent: expected binary mode (ce-* headers) or structured mode (application/cloudevents+json)',
    );
  }

  const text = body.toString('utf8');
  if (mode === 'structured') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new HttpInputError(400, 'structured CloudEvent body is not valid JSON');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new HttpInputError(400, 'structured CloudEvent body must be a JSON object');
    }
    const attrs = parsed as Record<string, unknown>;
    if (attrs.specversion !== '1.0') {
      throw new HttpInputError(400, 'unsupported CloudEvents specversion: expected 1.0');
    }
    requireAttributes((name) => attrs[name]);
  } else {
    if (headers['ce-specversion'] !== '1.0') {
      throw new HttpInputError(400, 'unsupported CloudEvents specversion: expected 1.0');
    }
    requireAttributes((name) => headers[`ce-${name}`]);
    return binaryEvent(headers, text);
  }

  let event: CloudEventV1<unknown>;
  try {
    const result = HTTP.toEvent<unknown>({ headers, body: text });
    if (Array.isArray(result)) {
      throw new HttpInputError(400, 'batch mode is not supported: send one CloudEvent per request');
    }
    event = result;
  } catch (e) {
    if (e instanceof HttpInputError) throw e;
    throw new HttpInputError(400, `invalid CloudEvent: ${describeValidation(e)}`);
  }

  // HTTP.toEvent does not validate binary-mode events: every event is validated here, explicitly
  // (cheaper than the SDK's JSON-schema validate(), which costs a twentieth of a no-op event).
  const problem = attributeProblem(event);
  if (problem !== undefined) throw new HttpInputError(400, `invalid CloudEvent: ${problem}`);
  const extensions: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(event)) {
    if (!CORE_ATTRIBUTES.has(key) && value !== undefined && typeof value !== 'function') {
      extensions[key] = value;
    }
  }
  return {
    id: event.id,
    type: event.type,
    source: event.source,
    subject: event.subject,
    mode,
    data: event.data,
    extensions,
  };
}

/** ce-* headers that carry context attributes; every other ce-* header is an extension. */
const BINARY_ATTRIBUTE_HEADERS = new Set([
  'ce-id',
  'ce-type',
  'ce-source',
  'ce-specversion',
  'ce-subject',
  'ce-time',
  'ce-dataschema',
]);

/** Names that are not extensions in CloudEvents 1.0 and must not arrive as ce-* headers. */
const NOT_EXTENSIONS = new Set([
  'data',
  'data_base64',
  'datacontenttype',
  'datacontentencoding',
  'schemaurl',
]);

/** Content types whose data is JSON (exactly the SDK's table, so the same events parse). */
const JSON_CONTENT_TYPES = new Set([
  'application/json',
  'application/json; charset=utf-8',
  'application/cloudevents+json',
  'application/cloudevents+json; charset=utf-8',
]);

/**
 * A binary-mode event, read straight from the headers: attributes from ce-*, data parsed as JSON
 * for a JSON content type. What HTTP.toEvent would produce for the fields we use, without its
 * per-event costs: a copy of the headers, a frozen CloudEvent object, and two Error objects (with
 * stack traces) that its JSON parser builds for every payload whether or not it throws.
 * requireAttributes has checked id, source, type, subject, dataschema and time already.
 */
function binaryEvent(headers: IncomingHttpHeaders, text: string): IncomingEvent {
  const extensions: Record<string, unknown> = {};
  for (const header in headers) {
    if (!header.startsWith('ce-') || BINARY_ATTRIBUTE_HEADERS.has(header)) continue;
    const name = header.slice(3);
    if (NOT_EXTENSIONS.has(name)) {
      throw new HttpInputError(400, `invalid CloudEvent: "${name}" is not a binary-mode attribute`);
    }
    if (!EXTENSION_NAME.test(name)) {
      throw new HttpInputError(
        400,
        `invalid CloudEvent: invalid extension attribute name "${name.slice(0, 40)}"`,
      );
    }
    const value = headers[header];
    if (typeof value !== 'string') {
      throw new HttpInputError(400, `invalid CloudEvent: extension "${name}" must be a string`);
    }
    extensions[name] = value;
  }
  let data: unknown = text;
  const contentType = headers['content-type'];
  if (text !== '' && contentType !== undefined && JSON_CONTENT_TYPES.has(contentType)) {
    try {
      data = JSON.parse(text);
    } catch (e) {
      throw new HttpInputError(
        400,
        `invalid CloudEvent: data is not valid JSON: ${describeValidation(e)}`,
      );
    }
  }
  const subject = headers['ce-subject'];
  return {
    id: headers['ce-id'] as string,
    type: headers['ce-type'] as string,
    source: headers['ce-source'] as string,
    subject: typeof subject === 'string' && subject !== '' ? subject : undefined,
    mode: 'binary',
    data,
    extensions,
  };
}

const EXTENSION_NAME = /^[a-z0-9]{1,20}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** Extension attribute rules (the SDK's object also carries unset attributes as undefined). */
function attributeProblem(event: CloudEventV1<unknown>): string | undefined {
  for (const [key, value] of Object.entries(event as unknown as Record<string, unknown>)) {
    if (CORE_ATTRIBUTES.has(key) || value === undefined || typeof value === 'function') continue;
    if (!EXTENSION_NAME.test(key)) return `invalid extension attribute name "${key.slice(0, 40)}"`;
    const t = typeof value;
    if (t !== 'string' && t !== 'number' && t !== 'boolean') {
      return `extension "${key}" must be a string, number or boolean`;
    }
  }
  return undefined;
}

/** The SDK invents an id when none is sent; the spec requires id, source and type. */
function requireAttributes(get: (name: string) => unknown): void {
  for (const name of ['id', 'source', 'type']) {
    const value = get(name);
    if (typeof value !== 'string' || value.length === 0) {
      throw new HttpInputError(400, `invalid CloudEvent: required attribute "${name}" is missing`);
    }
  }
  // Checked as sent: the SDK normalises `time` and drops empty strings.
  for (const name of ['subject', 'datacontenttype', 'dataschema']) {
    const value = get(name);
    if (value !== undefined && (typeof value !== 'string' || value.length === 0)) {
      throw new HttpInputError(400, `invalid CloudEvent: "${name}" must be a non-empty string`);
    }
  }
  const time = get('time');
  if (
    time !== undefined &&
    (typeof time !== 'string' || !RFC3339.test(time) || Number.isNaN(Date.parse(time)))
  ) {
    throw new HttpInputError(400, 'invalid CloudEvent: "time" must be an RFC 3339 timestamp');
  }
}

function describeValidation(e: unknown): string {
  if (e instanceof Error) {
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.length > 0) {
      const first = errors
        .slice(0, 3)
        .map((x: unknown) => {
          if (typeof x === 'object' && x !== null) {
            const o = x as { instancePath?: unknown; message?: unknown };
            return `${String(o.instancePath ?? '')} ${String(o.message ?? '')}`.trim();
          }
          return String(x);
        })
        .join('; ');
      return `${e.message}: ${first}`.slice(0, 500);
    }
    return e.message.slice(0, 500);
  }
  return 'unknown error';
}
