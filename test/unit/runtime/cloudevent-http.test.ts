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
  it.each([
    ['no CloudEvent at all', { 'content-type': 'application/json' }, '{}', 400, /not a CloudEvent/],
    ['batch mode', { 'content-type': 'application/cloudevents-batch+json' }, '[]', 400, /batch/],
    [
      'structured, not JSON format',
      { 'content-type': 'application/cloudevents+xml' },
      '<e/>',
      415,
      /json/,
    ],
    [
      'structured, broken JSON',
      { 'content-type': 'application/cloudevents+json' },
      '{',
      400,
      /not valid JSON/,
    ],
    [
      'structured, an array',
      { 'content-type': 'application/cloudevents+json' },
      '[]',
      400,
      /JSON object/,
    ],
    [
      'structured, missing id',
      { 'content-type': 'application/cloudevents+json' },
      JSON.stringify({ specversion: '1.0', type: 't', source: '/s' }),
      400,
      /invalid CloudEvent/,
    ],
    [
      'structured, spec 0.3',
      { 'content-type': 'application/cloudevents+json' },
      JSON.stringify({ specversion: '0.3', id: '1', type: 't', source: '/s' }),
      400,
      /specversion/,
    ],
    [
      'binary, missing ce-source',
      { ...binaryHeaders, 'ce-source': '' },
      '{}',
      400,
      /invalid CloudEvent/,
    ],
    [
      'binary, missing ce-type',
      Object.fromEntries(Object.entries(binaryHeaders).filter(([k]) => k !== 'ce-type')),
      '{}',
      400,
      /invalid CloudEvent/,
    ],
    [
      'binary, a time that is not RFC 3339',
      { ...binaryHeaders, 'ce-time': 'yesterday' },
      '{}',
      400,
      /time/,
    ],
    [
      'binary, an extension name with an underscore',
      { ...binaryHeaders, 'ce-bad_name': 'x' },
      '{}',
      400,
      /extension/,
    ],
    [
      'structured, an extension that is an object',
      { 'content-type': 'application/cloudevents+json' },
      JSON.stringify({ specversion: '1.0', id: '1', type: 't', source: '/s', ext: { a: 1 } }),
      400,
      /extension/,
    ],
    [
      'structured, an empty subject',
      { 'content-type': 'application/cloudevents+json' },
      JSON.stringify({ specversion: '1.0', id: '1', type: 't', source: '/s', subject: '' }),
      400,
      /subject/,
    ],
    [
      'binary, wrong spec version',
      { ...binaryHeaders, 'ce-specversion': '2.0' },
      '{}',
      400,
      /specversion/,
    ],
  ])('rejects %s', (_name, headers, body, status, pattern) => {
    let error: unknown;
    try {
      parseCloudEvent(headers, Buffer.from(body));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HttpInputError);
    expect((error as HttpInputError).status).toBe(status);
    expect((error as HttpInputError).message).toMatch(pattern);
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
    let error: unknown;
    try {
      parseCloudEvent({ ...base, ...extra }, Buffer.from(body));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HttpInputError);
    expect((error as HttpInputError).status).toBe(400);
    expect((error as HttpInputError).message).toMatch(pattern);
  });
});
