import { describe, expect, it } from 'vitest';
import { CloudEvent, HTTP } from 'cloudevents';
import { HttpInputError, parseCloudEvent } from '../../../shared/runtime/cloudevent-http.js';

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
