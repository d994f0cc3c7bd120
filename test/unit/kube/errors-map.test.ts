import { describe, expect, it } from 'vitest';
import { KubeError, type KubeErrorKind } from '../../../shared/kube/errors.js';
import {
  kindForStatus,
  type RequestFailure,
  type RequestTarget,
  statusDetail,
  toKubeError,
} from '../../../shared/kube/errors-map.js';

const agGet: RequestTarget = {
  verb: 'get',
  resource: 'artifactgenerators',
  namespace: 'cozy-system',
  name: 'flux-apps',
};

function status(code: number, reason: string, message: string): string {
  return JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    code,
    reason,
    message,
  });
}

interface Row {
  name: string;
  failure: RequestFailure;
  kind: KubeErrorKind;
  statusCode: number | undefined;
  contains: string[];
  excludes?: string[];
}

const rows: Row[] = [
  {
    name: '404 NotFound with the server message',
    failure: {
      kind: 'http',
      statusCode: 404,
      body: status(404, 'NotFound', 'artifactgenerators "flux-apps" not found'),
    },
    kind: 'NotFound',
    statusCode: 404,
    contains: [
      'get artifactgenerators cozy-system/flux-apps',
      'HTTP 404 NotFound',
      'artifactgenerators "flux-apps" not found',
    ],
  },
  {
    name: '409 stale resourceVersion',
    failure: {
      kind: 'http',
      statusCode: 409,
      body: status(409, 'Conflict', 'the object has been modified'),
    },
    kind: 'Conflict',
    statusCode: 409,
    contains: ['HTTP 409 Conflict', 'the object has been modified'],
  },
  {
    name: '409 AlreadyExists on create',
    failure: {
      kind: 'http',
      statusCode: 409,
      body: status(409, 'AlreadyExists', 'pingsources "a" already exists'),
    },
    kind: 'Conflict',
    statusCode: 409,
    contains: ['AlreadyExists', 'already exists'],
  },
  {
    name: '410 expired continue token',
    failure: {
      kind: 'http',
      statusCode: 410,
      body: status(410, 'Expired', 'the provided continue parameter is too old'),
    },
    kind: 'Conflict',
    statusCode: 410,
    contains: ['HTTP 410 Expired'],
  },
  {
    name: '422 Invalid',
    failure: {
      kind: 'http',
      statusCode: 422,
      body: status(422, 'Invalid', 'status.conditions[0].reason: Invalid value: "bad reason"'),
    },
    kind: 'Invalid',
    statusCode: 422,
    contains: ['HTTP 422 Invalid', 'status.conditions[0].reason'],
  },
  {
    name: '400 BadRequest',
    failure: { kind: 'http', statusCode: 400, body: status(400, 'BadRequest', 'bad patch') },
    kind: 'Invalid',
    statusCode: 400,
    contains: ['HTTP 400 BadRequest', 'bad patch'],
  },
  {
    name: '415 unsupported media type is a client bug',
    failure: { kind: 'http', statusCode: 415, body: status(415, 'UnsupportedMediaType', 'no') },
    kind: 'Invalid',
    statusCode: 415,
    contains: ['HTTP 415'],
  },
  {
    name: '401 Unauthorized',
    failure: { kind: 'http', statusCode: 401, body: status(401, 'Unauthorized', 'Unauthorized') },
    kind: 'Forbidden',
    statusCode: 401,
    contains: ['HTTP 401 Unauthorized'],
  },
  {
    name: '403 Forbidden',
    failure: {
      kind: 'http',
      statusCode: 403,
      body: status(403, 'Forbidden', 'user "x" cannot get resource'),
    },
    kind: 'Forbidden',
    statusCode: 403,
    contains: ['HTTP 403 Forbidden', 'cannot get resource'],
  },
  {
    name: '408 request timeout',
    failure: { kind: 'http', statusCode: 408, body: '' },
    kind: 'Transient',
    statusCode: 408,
    contains: ['HTTP 408'],
  },
  {
    name: '429 too many requests',
    failure: { kind: 'http', statusCode: 429, body: status(429, 'TooManyRequests', 'slow down') },
    kind: 'Transient',
    statusCode: 429,
    contains: ['HTTP 429 TooManyRequests', 'slow down'],
  },
  {
    name: '500 etcd timeout',
    failure: {
      kind: 'http',
      statusCode: 500,
      body: status(500, 'InternalError', 'etcdserver: request timed out'),
    },
    kind: 'Transient',
    statusCode: 500,
    contains: ['etcdserver: request timed out'],
  },
  {
    name: '503 with a non-Status body: the body is not quoted',
    failure: {
      kind: 'http',
      statusCode: 503,
      body: '<html>proxy says Authorization: Bearer s3cr3t</html>',
    },
    kind: 'Transient',
    statusCode: 503,
    contains: ['HTTP 503'],
    excludes: ['s3cr3t', '<html>'],
  },
  {
    name: '504 gateway timeout',
    failure: { kind: 'http', statusCode: 504, body: '{"not":"a status"}' },
    kind: 'Transient',
    statusCode: 504,
    contains: ['HTTP 504'],
    excludes: ['not'],
  },
  {
    name: '302 redirect is not a Kubernetes answer',
    failure: { kind: 'http', statusCode: 302, body: '' },
    kind: 'Transient',
    statusCode: 302,
    contains: ['HTTP 302'],
  },
  {
    name: 'connection refused',
    failure: {
      kind: 'transport',
      code: 'ECONNREFUSED',
      message: 'connect ECONNREFUSED 127.0.0.1:1',
    },
    kind: 'Transient',
    statusCode: undefined,
    contains: ['no answer from the API server (ECONNREFUSED)', '127.0.0.1:1'],
  },
  {
    name: 'socket hang up',
    failure: { kind: 'transport', code: 'ECONNRESET', message: 'socket hang up' },
    kind: 'Transient',
    statusCode: undefined,
    contains: ['ECONNRESET', 'socket hang up'],
  },
  {
    name: 'abort without a code',
    failure: { kind: 'transport', message: 'The operation was aborted' },
    kind: 'Transient',
    statusCode: undefined,
    contains: ['The operation was aborted'],
  },
  {
    name: 'per-request timeout',
    failure: { kind: 'timeout', timeoutMs: 10_000 },
    kind: 'Transient',
    statusCode: undefined,
    contains: ['get artifactgenerators cozy-system/flux-apps', 'within 10000 ms'],
  },
  {
    name: 'undecodable 2xx answer',
    failure: { kind: 'decode', statusCode: 200 },
    kind: 'Transient',
    statusCode: 200,
    contains: ['HTTP 200', 'not the expected JSON object'],
  },
  {
    name: 'credentials could not be prepared',
    failure: { kind: 'credentials', code: 'ENOENT' },
    kind: 'Transient',
    statusCode: undefined,
    contains: ['could not prepare the kubeconfig credentials (ENOENT)'],
  },
];

describe('toKubeError', () => {
  it.each(rows)('$name -> $kind', (row) => {
    const err = toKubeError(row.failure, agGet);
    expect(err).toBeInstanceOf(KubeError);
    expect(err.kind).toBe(row.kind);
    expect(err.name).toBe(`Kube${row.kind}Error`);
    expect(err.statusCode).toBe(row.statusCode);
    for (const s of row.contains) expect(err.message).toContain(s);
    for (const s of row.excludes ?? []) expect(err.message).not.toContain(s);
    // The raw failure is never attached: it is the only way credentials could travel along.
    expect(err.cause).toBeUndefined();
  });
});

describe('kindForStatus', () => {
  const table: [number, KubeErrorKind][] = [
    [400, 'Invalid'],
    [401, 'Forbidden'],
    [403, 'Forbidden'],
    [404, 'NotFound'],
    [405, 'Invalid'],
    [408, 'Transient'],
    [409, 'Conflict'],
    [410, 'Conflict'],
    [413, 'Invalid'],
    [422, 'Invalid'],
    [429, 'Transient'],
    [500, 'Transient'],
    [502, 'Transient'],
    [503, 'Transient'],
    [504, 'Transient'],
    [101, 'Transient'],
    [301, 'Transient'],
  ];
  it.each(table)('HTTP %i -> %s', (code, kind) => {
    expect(kindForStatus(code)).toBe(kind);
  });
});

describe('message targets', () => {
  const table: [RequestTarget, string][] = [
    [{ verb: 'list', resource: 'artifactgenerators' }, 'list artifactgenerators in all namespaces'],
    [
      { verb: 'list', resource: 'artifactgenerators', namespace: 'ns1' },
      'list artifactgenerators in namespace ns1',
    ],
    [
      { verb: 'patch-status', resource: 'packagesources', name: 'ps1' },
      'patch-status packagesources ps1',
    ],
    [
      { verb: 'delete', resource: 'pingsources', namespace: 'ns', name: 'p' },
      'delete pingsources ns/p',
    ],
  ];
  it.each(table)('%o names %s', (target, expected) => {
    expect(toKubeError({ kind: 'timeout', timeoutMs: 1 }, target).message).toContain(expected);
  });
});

describe('statusDetail', () => {
  it.each([
    ['empty body', '', {}],
    ['plain text', '404 page not found', {}],
    ['JSON null', 'null', {}],
    ['JSON that is not a Status', '{"kind":"Secret","message":"x"}', {}],
    ['Status with reason only', '{"kind":"Status","reason":"Gone"}', { reason: 'Gone' }],
    ['Status with non-string fields', '{"kind":"Status","reason":7,"message":{"a":1}}', {}],
  ])('%s', (_name, body, expected) => {
    expect(statusDetail(body)).toEqual(expected);
  });

  it('keeps a long message to one bounded line', () => {
    const long = `first line\nsecond\t${'x'.repeat(5000)}`;
    const detail = statusDetail(status(500, 'InternalError', long));
    expect(detail.message).toBeDefined();
    expect(detail.message).not.toMatch(/[\n\t]/);
    expect(detail.message?.length).toBeLessThanOrEqual(513);
    expect(detail.message?.startsWith('first line second ')).toBe(true);
  });
});
