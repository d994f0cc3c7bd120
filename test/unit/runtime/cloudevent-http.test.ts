import { describe, expect, it } from 'vitest';
import { CloudEvent, HTTP } from 'cloudevents';
import {
  CORE_ATTRIBUTES,
  HttpInputError,
  parseCloudEvent,
} from '../../../shared/runtime/cloudevent-http.js';

const event = new CloudEvent({
  id: 'e-1',
  type: 'dev.knative.apiserver.resource.update',
  source: 'https://10.96.0.1:443',
  subject: '/apis/source.extensions.fluxcd.io/v1beta1/namespaces/cozy-system/artifactgenerators/x',
  datacontenttype: 'application/json',
  data: { kind: 'ArtifactGenerator', metadata: { name: 'x', namespace: 'cozy-system' } },
  kind: 'ArtifactGenerator',
  namespace: 'cozy-system',
});

function asRequest(message: {
  headers: Record<string, unknown>;
  body: unknown;
}): [Record<string, string>, Buffer] {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(message.headers)) headers[k.toLowerCase()] = String(v);
  return [headers, Buffer.from(String(message.body))];
}

/** parseCloudEvent refuses the request with this HTTP status and a message matching `pattern`. */
function expectRejected(
  headers: Record<string, string>,
  body: string,
  status: number,
  pattern: RegExp,
): void {
  let error: unknown;
  try {
    parseCloudEvent(headers, Buffer.from(body));
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(HttpInputError);
  expect((error as HttpInputError).status).toBe(status);
  expect((error as HttpInputError).message).toMatch(pattern);
}

describe('parseCloudEvent', () => {
  it.each([
    ['binary', HTTP.binary(event)],
    ['structured', HTTP.structured(event)],
  ])('accepts %s mode with data and extensions', (mode, message) => {
    const parsed = parseCloudEvent(...asRequest(message));
    expect(parsed).toMatchObject({
      id: 'e-1',
      type: event.type,
      source: event.source,
      mode,
      data: { kind: 'ArtifactGenerator', metadata: { name: 'x', namespace: 'cozy-system' } },
      extensions: { kind: 'ArtifactGenerator', namespace: 'cozy-system' },
    });
  });

  const binaryHeaders = asRequest(HTTP.binary(event))[0];
  /** The binary-mode headers of `event`, changed by `extra`. */
  const binary = (extra: Record<string, string>) => ({ ...binaryHeaders, ...extra });
  const structured = { 'content-type': 'application/cloudevents+json' };
  /** A structured-mode body: a valid event unless `attributes` change it. */
  const structuredBody = (attributes: Record<string, unknown>): string =>
    JSON.stringify({ specversion: '1.0', id: '1', type: 't', source: '/s', ...attributes });
  // [name, headers, body, message, HTTP status (400 unless given)]
  it.each<[string, Record<string, string>, string, RegExp, number?]>([
    ['no CloudEvent at all', { 'content-type': 'application/json' }, '{}', /not a CloudEvent/],
    ['batch mode', { 'content-type': 'application/cloudevents-batch+json' }, '[]', /batch/],
    [
      'structured, not JSON format',
      { 'content-type': 'application/cloudevents+xml' },
      '<e/>',
      /json/,
      415,
    ],
    ['structured, broken JSON', structured, '{', /not valid JSON/],
    ['structured, an array', structured, '[]', /JSON object/],
    ['structured, missing id', structured, structuredBody({ id: undefined }), /invalid CloudEvent/],
    ['structured, spec 0.3', structured, structuredBody({ specversion: '0.3' }), /specversion/],
    ['binary, missing ce-source', binary({ 'ce-source': '' }), '{}', /invalid CloudEvent/],
    [
      'binary, missing ce-type',
      Object.fromEntries(Object.entries(binaryHeaders).filter(([k]) => k !== 'ce-type')),
      '{}',
      /invalid CloudEvent/,
    ],
    ['binary, a time that is not RFC 3339', binary({ 'ce-time': 'yesterday' }), '{}', /time/],
    [
      'binary, an extension name with an underscore',
      binary({ 'ce-bad_name': 'x' }),
      '{}',
      /extension/,
    ],
    [
      'structured, an extension that is an object',
      structured,
      structuredBody({ ext: { a: 1 } }),
      /extension/,
    ],
    ['structured, an empty subject', structured, structuredBody({ subject: '' }), /subject/],
    ['binary, wrong spec version', binary({ 'ce-specversion': '2.0' }), '{}', /specversion/],
  ])('rejects %s', (_name, headers, body, pattern, status = 400) => {
    expectRejected(headers, body, status, pattern);
  });
});

describe('parseCloudEvent: binary mode is read directly, as the SDK would read it', () => {
  // The reference: what HTTP.toEvent gives for the fields a function uses.
  const viaSdk = (headers: Record<string, string>, body: string) => {
    const e = HTTP.toEvent<unknown>({ headers, body }) as CloudEvent<unknown>;
    const extensions: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(e)) {
      if (!CORE_ATTRIBUTES.has(k) && v !== undefined && typeof v !== 'function') extensions[k] = v;
    }
    return {
      id: e.id,
      type: e.type,
      source: e.source,
      subject: e.subject,
      data: e.data,
      extensions,
    };
  };
  const base: Record<string, string> = {
    'ce-specversion': '1.0',
    'ce-id': 'b-1',
    'ce-type': 'dev.knative.sources.ping',
    'ce-source': '/apis/v1/namespaces/ns/pingsources/resync',
  };
  it.each<[string, Record<string, string>, string]>([
    ['JSON data', { 'content-type': 'application/json' }, '{"purpose":"resync"}'],
    ['JSON with charset', { 'content-type': 'application/json; charset=utf-8' }, '[1,2]'],
    ['JSON, a bare string', { 'content-type': 'application/json' }, '"x"'],
    ['text data stays text', { 'content-type': 'text/plain' }, 'hello'],
    ['no content type: text', {}, '{"a":1}'],
    ['JSON content type, empty body', { 'content-type': 'application/json' }, ''],
    ['octet-stream', { 'content-type': 'application/octet-stream' }, 'raw'],
    [
      'extensions and a subject',
      {
        'content-type': 'application/json',
        'ce-kind': 'ArtifactGenerator',
        'ce-namespace': 'cozy-system',
        'ce-name': 'x',
        'ce-subject': '/apis/x',
        'ce-time': '2026-11-29T09:40:33.512Z',
      },
      '{}',
    ],
    ['an empty extension value', { 'ce-empty': '' }, ''],
  ])('%s', (_label, extra, body) => {
    const headers = { ...base, ...extra };
    const parsed = parseCloudEvent(headers, Buffer.from(body));
    expect(parsed.mode).toBe('binary');
    const { mode: _mode, ...fields } = parsed;
    expect(fields).toEqual(viaSdk(headers, body));
  });

  it.each([
    ['broken JSON data', { 'content-type': 'application/json' }, '{', /not valid JSON/],
    ['a reserved name as an extension', { 'ce-data_base64': 'eA==' }, '', /not a binary-mode/],
    ['schemaurl (CloudEvents 0.3 only)', { 'ce-schemaurl': 'http://x' }, '', /not a binary-mode/],
    ['an extension name too long', { 'ce-abcdefghijklmnopqrstu': 'x' }, '', /extension/],
  ])('rejects %s with 400', (_label, extra, body, pattern) => {
    expectRejected({ ...base, ...extra }, body, 400, pattern);
  });
});
