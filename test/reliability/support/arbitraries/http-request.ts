// Whole HTTP requests for the function endpoints: arbitrary headers, content types and bodies,
// and CloudEvents in binary or structured mode with wrong, missing or mistyped attributes.

import fc from 'fast-check';
import {
  ACTION_CLEAR_TRACKING,
  ACTION_FORCE,
  ACTION_SOURCE,
  ACTION_STALLED,
  APISERVER_ADD,
  APISERVER_DELETE,
  APISERVER_REF_ADD,
  APISERVER_REF_DELETE,
  APISERVER_REF_UPDATE,
  APISERVER_UPDATE,
  PING,
} from '../../../../shared/core/objects/cloudevent-types.js';
import { AG_API_VERSION, AG_KIND } from '../../../../shared/core/objects/types.js';
import { actionData, pingData } from './action-data.js';
import {
  brokenArtifactGenerator,
  plausibleArtifactGenerator,
  referenceData,
} from './artifact-generator.js';
import { anyJson, wrongType } from './values.js';

export interface FuzzRequest {
  /** What kind of input this is, for the statistics. */
  readonly label: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  /** The CloudEvent type the request claims, when it claims one. */
  readonly eventType?: string;
}

/** Headers that frame the request; changing them would fuzz Node's HTTP parser, not the product. */
const FRAMING = new Set([
  'content-length',
  'transfer-encoding',
  'host',
  'connection',
  'expect',
  'upgrade',
  'keep-alive',
  'te',
  'trailer',
  'proxy-connection',
]);

export const KNOWN_TYPES = [
  APISERVER_ADD,
  APISERVER_UPDATE,
  APISERVER_DELETE,
  APISERVER_REF_ADD,
  APISERVER_REF_UPDATE,
  APISERVER_REF_DELETE,
  PING,
  ACTION_FORCE,
  ACTION_CLEAR_TRACKING,
  ACTION_STALLED,
] as const;

const headerChar = fc
  .oneof(
    { weight: 40, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
    { weight: 1, arbitrary: fc.constant(0x09) },
    { weight: 2, arbitrary: fc.integer({ min: 0x80, max: 0xff }) },
  )
  .map((c) => String.fromCharCode(c));

/** A value Node's HTTP client will send (latin1, no CR/LF/NUL). */
export const headerValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 30, arbitrary: fc.string({ unit: headerChar, maxLength: 80 }) },
  // Beyond Node's 16 KiB header limit: the server answers 431 before the app sees it.
  { weight: 1, arbitrary: fc.integer({ min: 4_000, max: 20_000 }).map((n) => 'h'.repeat(n)) },
);

/** Turns any string into something headerValue would produce. */
export function asHeaderValue(s: string): string {
  return s.replace(/[^\t\x20-\x7e\x80-\xff]/g, '?');
}

const headerName: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'ce-id',
      'ce-type',
      'ce-source',
      'ce-specversion',
      'ce-subject',
      'ce-time',
      'ce-kind',
      'ce-apiversion',
      'ce-name',
      'ce-namespace',
      'ce-datacontenttype',
      'ce-dataschema',
      'ce-data_base64',
      'ce-data',
      'ce-',
      'ce-knativeerrorcode',
      'ce-traceparent',
      'content-type',
      'content-encoding',
      'accept',
      'accept-encoding',
      'authorization',
      'x-request-id',
    ),
  },
  {
    weight: 1,
    arbitrary: fc.stringMatching(/^[a-z][a-z0-9_-]{0,24}$/).filter((n) => !FRAMING.has(n)),
  },
);

export const contentType: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'application/cloudevents+json',
      'application/cloudevents+json; charset=utf-8',
      'APPLICATION/CLOUDEVENTS+JSON',
      'application/cloudevents-batch+json',
      'application/cloudevents',
      'application/cloudevents+xml',
      'text/plain',
      'application/octet-stream',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      '',
      ';',
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
    ),
  },
  { weight: 1, arbitrary: headerValue },
);

const garbageBody: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(Buffer.alloc(0)) },
  {
    weight: 4,
    arbitrary: fc.string({ unit: 'binary', maxLength: 200 }).map((s) => Buffer.from(s)),
  },
  { weight: 4, arbitrary: fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)) },
  { weight: 6, arbitrary: anyJson.map((v) => Buffer.from(JSON.stringify(v) ?? 'null')) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 1, max: 100_000 }), fc.boolean())
      .map(([n, arrays]) =>
        Buffer.from(
          arrays ? '['.repeat(n) + ']'.repeat(n) : '{"a":'.repeat(n) + '1' + '}'.repeat(n),
        ),
      ),
  },
  // Around the 1 MiB body limit.
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 1024 * 1024 - 64, max: 1024 * 1024 + 64 })
      .map((n) => Buffer.alloc(n, 0x20)),
  },
);

/** A request that is anything but a well-formed CloudEvent (mostly). */
export const garbageRequest: fc.Arbitrary<FuzzRequest> = fc
  .record({
    headers: fc.array(fc.tuple(headerName, headerValue), { maxLength: 8 }),
    contentType: fc.option(contentType, { nil: undefined }),
    body: garbageBody,
  })
  .map(({ headers, contentType: ct, body }) => {
    const out: Record<string, string> = {};
    for (const [k, v] of headers) out[k] = v;
    if (ct !== undefined) out['content-type'] = ct;
    return { label: 'garbage', headers: out, body };
  });

/** One CloudEvent attribute: valid, missing, empty, or the wrong thing. */
function attribute(valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 80, arbitrary: valid },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constant('') },
    { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
    { weight: 1, arbitrary: wrongType },
  );
}

export function eventType(): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 10, arbitrary: fc.constantFrom(...KNOWN_TYPES) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'io.cozystack.sourcewatcher.other',
        'dev.knative.apiserver.resource.ADD',
        `${ACTION_FORCE} `,
        '',
      ),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
  );
}

/** Event data that matches the type most of the time, and anything otherwise. */
function dataFor(type: string, t0: number): fc.Arbitrary<unknown> {
  let matching: fc.Arbitrary<unknown>;
  switch (type) {
    case APISERVER_ADD:
    case APISERVER_UPDATE:
    case APISERVER_DELETE:
      matching = fc.oneof(
        { weight: 3, arbitrary: brokenArtifactGenerator(t0) },
        { weight: 2, arbitrary: plausibleArtifactGenerator(t0) },
      );
      break;
    case APISERVER_REF_ADD:
    case APISERVER_REF_UPDATE:
    case APISERVER_REF_DELETE:
      matching = referenceData;
      break;
    case PING:
      matching = pingData(t0);
      break;
    case ACTION_FORCE:
    case ACTION_CLEAR_TRACKING:
    case ACTION_STALLED:
      matching = actionData(t0);
      break;
    default:
      matching = anyJson;
  }
  return fc.oneof(
    { weight: 8, arbitrary: matching },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: anyJson },
  );
}

const sourceFor = (type: string): string =>
  type === PING
    ? '/apis/v1/namespaces/source-watcher-recovery/pingsources/resync'
    : type.startsWith('io.cozystack.')
      ? ACTION_SOURCE
      : 'https://10.96.0.1:443';

/** A CloudEvent in binary or structured mode, with attributes and data broken at random. */
export function cloudEventRequest(
  t0: number,
  opts: { types?: fc.Arbitrary<string> } = {},
): fc.Arbitrary<FuzzRequest> {
  // Arbitraries are built once per type: building them inside chain() for every case is slow.
  const perType = new Map<string, fc.Arbitrary<FuzzRequest>>();
  return (opts.types ?? eventType()).chain((type) => {
    let arb = perType.get(type);
    if (arb === undefined) {
      arb = eventOfType(type, t0);
      perType.set(type, arb);
    }
    return arb;
  });
}

function eventOfType(type: string, t0: number): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      mode: fc.constantFrom('binary', 'structured'),
      specversion: attribute(fc.constant('1.0')).map((v) => (v === '' ? '0.3' : v)),
      id: attribute(fc.uuid()),
      source: attribute(fc.constant(sourceFor(type))),
      type: attribute(fc.constant(type)),
      subject: fc.option(attribute(fc.constant('cozy-system/x')), { nil: undefined }),
      time: fc.option(attribute(fc.constant(new Date(t0).toISOString())), { nil: undefined }),
      datacontenttype: fc.oneof(
        { weight: 8, arbitrary: fc.constant('application/json') },
        { weight: 1, arbitrary: contentType },
      ),
      extensions: fc.oneof(
        {
          weight: 8,
          arbitrary: fc.constant({
            kind: AG_KIND,
            apiversion: AG_API_VERSION,
            name: 'x',
            namespace: 'fz',
          }),
        },
        { weight: 8, arbitrary: fc.constant({}) },
        {
          weight: 1,
          arbitrary: fc.record(
            {
              kind: attribute(fc.constantFrom(AG_KIND, 'PackageSource', 'Pod')),
              apiversion: attribute(fc.constantFrom(AG_API_VERSION, 'v1', 'cozystack.io/v1alpha1')),
              knativeerrorcode: attribute(fc.constant('500')),
              'bad-name': fc.string({ maxLength: 5 }),
              UPPER: fc.string({ maxLength: 5 }),
            },
            { requiredKeys: [] },
          ),
        },
      ),
      data: dataFor(type, t0),
      dataRaw: fc.oneof(
        { weight: 12, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: garbageBody },
      ),
    })
    .map((e): FuzzRequest => {
      const attrs: Record<string, unknown> = {
        specversion: e.specversion,
        id: e.id,
        source: e.source,
        type: e.type,
        subject: e.subject,
        time: e.time,
        datacontenttype: e.datacontenttype,
        ...(e.extensions as Record<string, unknown>),
      };
      if (e.mode === 'binary') {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(attrs)) {
          if (v === undefined || k === 'datacontenttype') continue;
          headers[`ce-${k.toLowerCase()}`] = asHeaderValue(
            typeof v === 'string' ? v : JSON.stringify(v),
          );
        }
        headers['content-type'] = asHeaderValue(String(e.datacontenttype));
        const body = e.dataRaw ?? Buffer.from(e.data === undefined ? '' : JSON.stringify(e.data));
        return { label: `binary ${type}`, headers, body, eventType: type };
      }
      const envelope: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(attrs)) if (v !== undefined) envelope[k] = v;
      if (e.data !== undefined) envelope['data'] = e.data;
      const body = e.dataRaw ?? Buffer.from(JSON.stringify(envelope));
      return {
        label: `structured ${type}`,
        headers: { 'content-type': 'application/cloudevents+json; charset=utf-8' },
        body,
        eventType: type,
      };
    });
}

/** The whole mix a function is fuzzed with. */
export function functionInput(t0: number, types?: fc.Arbitrary<string>): fc.Arbitrary<FuzzRequest> {
  return fc.oneof(
    { weight: 1, arbitrary: garbageRequest },
    { weight: 6, arbitrary: cloudEventRequest(t0, types !== undefined ? { types } : {}) },
  );
}
