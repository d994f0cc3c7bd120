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
  contains: string[];
  excludes?: string[] | undefined;
}

const http = (statusCode: number, body = ''): RequestFailure => ({
  kind: 'http',
  statusCode,
  body,
});

/**
 * HTTP answers with a Kubernetes Status body, [name, code, Status reason, Status message, kind]:
 * the error names the request, `HTTP <code> <reason>` and the server's message.
 */
const statusAnswers: [string, number, string, string, KubeErrorKind][] = [
  [
    '404 NotFound with the server message',
    404,
    'NotFound',
    'artifactgenerators "flux-apps" not found',
    'NotFound',
  ],
  ['409 stale resourceVersion', 409, 'Conflict', 'the object has been modified', 'Conflict'],
  [
    '409 AlreadyExists on create',
    409,
    'AlreadyExists',
    'pingsources "a" already exists',
    'Conflict',
  ],
  [
    '410 expired continue token',
    410,
    'Expired',
    'the provided continue parameter is too old',
    'Conflict',
  ],
  [
    '422 Invalid',
    422,
    'Invalid',
    'status.conditions[0].reason: Invalid value: "bad reason"',
    'Invalid',
  ],
  ['400 BadRequest', 400, 'BadRequest', 'bad patch', 'Invalid'],
  ['415 unsupported media type is a client bug', 415, 'UnsupportedMediaType', 'no', 'Invalid'],
  ['401 Unauthorized', 401, 'Unauthorized', 'Unauthorized', 'Forbidden'],
  ['403 Forbidden', 403, 'Forbidden', 'user "x" cannot get resource', 'Forbidden'],
  ['429 too many requests', 429, 'TooManyRequests', 'slow down', 'Transient'],
  ['500 etcd timeout', 500, 'InternalError', 'etcdserver: request timed out', 'Transient'],
];

/** Failures without a Status to read, all Transient: [name, failure, contains, excludes]. */
const transientFailures: [string, RequestFailure, string[], string[]?][] = [
  ['408 request timeout', http(408), ['HTTP 408']],
  [
    '503 with a non-Status body: the body is not quoted',
    http(503, '<html>proxy says Authorization: Bearer s3cr3t</html>'),
    ['HTTP 503'],
    ['s3cr3t', '<html>'],
  ],
  ['504 gateway timeout', http(504, '{"not":"a status"}'), ['HTTP 504'], ['not']],
  ['302 redirect is not a Kubernetes answer', http(302), ['HTTP 302']],
  [
    'connection refused',
    { kind: 'transport', code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:1' },
    ['no answer from the API server (ECONNREFUSED)', '127.0.0.1:1'],
  ],
  [
    'socket hang up',
    { kind: 'transport', code: 'ECONNRESET', message: 'socket hang up' },
    ['ECONNRESET', 'socket hang up'],
  ],
  [
    'abort without a code',
    { kind: 'transport', message: 'The operation was aborted' },
    ['The operation was aborted'],
  ],
  [
    'per-request timeout',
    { kind: 'timeout', timeoutMs: 10_000 },
    ['get artifactgenerators cozy-system/flux-apps', 'within 10000 ms'],
  ],
  [
    'undecodable 2xx answer',
    { kind: 'decode', statusCode: 200 },
    ['HTTP 200', 'not the expected JSON object'],
  ],
  [
    'credentials could not be prepared',
    { kind: 'credentials', code: 'ENOENT' },
    ['could not prepare the kubeconfig credentials (ENOENT)'],
  ],
];

const rows: Row[] = [
  ...statusAnswers.map(([name, code, reason, message, kind]): Row => ({
    name,
    failure: http(code, status(code, reason, message)),
    kind,
    contains: ['get artifactgenerators cozy-system/flux-apps', `HTTP ${code} ${reason}`, message],
  })),
  ...transientFailures.map(([name, failure, contains, excludes]): Row => ({
    name,
    failure,
    kind: 'Transient',
    contains,
    excludes,
  })),
];

describe('toKubeError', () => {
  it.each(rows)('$name -> $kind', (row) => {
    const err = toKubeError(row.failure, agGet);
    expect(err).toBeInstanceOf(KubeError);
    expect(err.kind).toBe(row.kind);
    expect(err.name).toBe(`Kube${row.kind}Error`);
    // The error carries the status code of the answer; there is none without an answer.
    expect(err.statusCode).toBe('statusCode' in row.failure ? row.failure.statusCode : undefined);
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
