// Every input bound, tested at its edge (docs/input-limits.md): the request body (1 MiB, binary
// and structured mode, decoded size for compressed bodies), an AG event of exactly the limit, the number of conditions considered
// (64), the number of annotations considered (4096), the annotation value length (64 KiB) and the
// length of Kubernetes names (253).

import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ACTION_FORCE,
  ACTION_CLEAR_TRACKING,
  ANNOTATION_ATTEMPTS,
  APISERVER_UPDATE,
  formatTimeNano,
  MAX_ANNOTATION_VALUE_LENGTH,
  MAX_ANNOTATIONS,
  MAX_CONDITIONS,
} from '../../shared/core/index.js';
import {
  AG_API_VERSION,
  AG_KIND,
  type ArtifactGenerator,
  type Condition,
} from '../../shared/core/objects/types.js';
import { DEFAULT_BODY_LIMIT_BYTES } from '../../shared/runtime/function-app.js';
import { uniqueName } from '../support/apiserver.js';
import { DIGEST, INVENTORY } from '../support/ag-states.js';
import {
  API_FUNCTION_NAMES as FUNCTION_NAMES,
  SettableClock,
  startFunction,
  type ApiFunctionName as FunctionName,
  type RunningFunction as FunctionServer,
} from '../harness/functions.js';
import { functionFile } from './support/function-file.js';
import { createRawClient, type RawAnswer } from './support/raw-client.js';
import { progressing, succeeded } from '../support/conditions.js';

const { T0, NS, suite } = functionFile('limits', 'rel-il', 'nothing');
const MiB = 1024 * 1024;
const servers = new Map<FunctionName, FunctionServer>();

beforeAll(async () => {
  for (const fn of FUNCTION_NAMES) {
    servers.set(
      fn,
      await startFunction({
        fn,
        kubeConfig: suite.proxy.kubeConfig(`limits-${fn}`),
        clock: new SettableClock(T0),
        sinkUrl: suite.sink.url,
        env: { ALARM_NAME: uniqueName('limits-alarm') },
      }),
    );
  }
});
afterAll(async () => {
  console.log(
    `[input limits] bounds tested at the edge: body 1 MiB (binary, structured, 3 encodings), ` +
      `event data 1 MiB, ${MAX_CONDITIONS} conditions, ${MAX_ANNOTATIONS} annotations, ` +
      `${MAX_ANNOTATION_VALUE_LENGTH}-character annotation values, 253-character names`,
  );
  for (const s of servers.values()) await s.close();
});
beforeEach(() => {
  suite.sink.events.length = 0;
});

function urlOf(fn: FunctionName): string {
  const s = servers.get(fn);
  if (s === undefined) throw new Error(`${fn} not started`);
  return s.url;
}

async function post(
  fn: FunctionName,
  headers: Record<string, string>,
  body: Buffer,
): Promise<RawAnswer> {
  const client = createRawClient(urlOf(fn));
  try {
    return await client.post(headers, body);
  } finally {
    client.close();
  }
}

const binaryHeaders = (
  type: string,
  extra: Record<string, string> = {},
): Record<string, string> => ({
  'ce-specversion': '1.0',
  'ce-id': uniqueName('id'),
  'ce-source': '/limits',
  'ce-type': type,
  'content-type': 'application/json',
  ...extra,
});

/** A JSON object `{"pad":"xxx…"}` of exactly `size` bytes. */
function paddedJson(size: number): Buffer {
  const overhead = Buffer.byteLength(JSON.stringify({ pad: '' }));
  return Buffer.from(JSON.stringify({ pad: 'x'.repeat(size - overhead) }));
}

/** A structured-mode event of exactly `size` bytes. */
function structuredOfSize(size: number): Buffer {
  const envelope = (pad: string) =>
    JSON.stringify({
      specversion: '1.0',
      id: 'i',
      source: '/limits',
      type: 'com.example.other',
      data: { pad },
    });
  return Buffer.from(envelope('x'.repeat(size - Buffer.byteLength(envelope('')))));
}

const AG_EXT = (name: string) => ({
  'ce-kind': AG_KIND,
  'ce-apiversion': AG_API_VERSION,
  'ce-name': name,
  'ce-namespace': NS,
});

function ag(opts: {
  conditions: Condition[];
  annotations?: Record<string, string>;
  spec?: Record<string, unknown>;
}): ArtifactGenerator {
  return {
    apiVersion: AG_API_VERSION,
    kind: AG_KIND,
    // No creationTimestamp: an AG whose Ready is not seen is then not stuck either.
    metadata: {
      name: uniqueName('limit'),
      namespace: NS,
      generation: 1,
      resourceVersion: '5',
      ...(opts.annotations !== undefined ? { annotations: opts.annotations } : {}),
    },
    spec: opts.spec ?? {},
    status: { inventory: INVENTORY, observedSourcesDigest: DIGEST, conditions: opts.conditions },
  };
}

/** Posts an AG update to detect; returns the action types it emitted for that AG. */
async function detectActions(
  data: ArtifactGenerator,
): Promise<{ status: number; actions: string[] }> {
  const name = data.metadata?.name ?? '';
  const answer = await post(
    'detect',
    binaryHeaders(APISERVER_UPDATE, AG_EXT(name)),
    Buffer.from(JSON.stringify(data)),
  );
  const subject = `${NS}/${name}`;
  return {
    status: answer.status,
    actions: suite.sink.events.filter((e) => e.subject === subject).map((e) => e.type),
  };
}

const filler = (n: number): Condition[] =>
  Array.from({ length: n }, (_, i) => ({ type: `Filler${i}`, status: 'True', reason: 'Filler' }));

describe('request body: 1 MiB', () => {
  it('the limit is 1 MiB', () => {
    expect(DEFAULT_BODY_LIMIT_BYTES).toBe(MiB);
  });

  it.each(FUNCTION_NAMES)(
    '%s: binary mode, exactly 1 MiB is read; one byte more is 413',
    async (fn) => {
      const at = await post(fn, binaryHeaders('com.example.other'), paddedJson(MiB));
      const over = await post(fn, binaryHeaders('com.example.other'), paddedJson(MiB + 1));
      expect([at.status, at.body]).toEqual([200, JSON.stringify({ result: 'unknown-type' })]);
      expect(over.status).toBe(413);
    },
  );

  it.each(FUNCTION_NAMES)(
    '%s: structured mode, an envelope of exactly 1 MiB is read; one byte more is 413',
    async (fn) => {
      const headers = { 'content-type': 'application/cloudevents+json' };
      const at = await post(fn, headers, structuredOfSize(MiB));
      const over = await post(fn, headers, structuredOfSize(MiB + 1));
      expect(at.status).toBe(200);
      expect(over.status).toBe(413);
    },
  );

  it('event data of exactly 1 MiB (binary mode: the body is the data) is decided on: a stuck AG is forced', async () => {
    const base = ag({ conditions: [progressing(T0 - 60_000)] });
    const size = Buffer.byteLength(JSON.stringify(base));
    const padded = {
      ...base,
      spec: { pad: 'x'.repeat(MiB - size - Buffer.byteLength('"pad":""')) },
    };
    expect(Buffer.byteLength(JSON.stringify(padded))).toBe(MiB);
    expect(await detectActions(padded)).toEqual({ status: 200, actions: [ACTION_FORCE] });
  });
});

describe('content encoding: the limit applies to the decoded body', () => {
  it.each([
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ] as const)(
    '%s: a body that decodes to 1 MiB is read; one byte more is 413',
    async (encoding, encode) => {
      const headers = binaryHeaders('com.example.other', { 'content-encoding': encoding });
      const at = await post('detect', headers, encode(paddedJson(MiB)));
      const over = await post('detect', headers, encode(paddedJson(MiB + 1)));
      // A compressed bomb (a few KiB on the wire) is refused all the same.
      expect(encode(paddedJson(MiB + 1)).length).toBeLessThan(16 * 1024);
      expect([at.status, over.status]).toEqual([200, 413]);
    },
  );

  it.each(['compress', 'x-unknown', 'gzip, gzip'])(
    'an encoding it cannot decode (%s) is 400',
    async (encoding) => {
      const answer = await post(
        'detect',
        binaryHeaders('com.example.other', { 'content-encoding': encoding }),
        Buffer.from('{}'),
      );
      expect(answer.status).toBe(400);
    },
  );
});

describe(`conditions considered: the first ${MAX_CONDITIONS}`, () => {
  it.each([
    [MAX_CONDITIONS - 1, [ACTION_FORCE]],
    [MAX_CONDITIONS, []],
  ])('a stuck Ready after %i other conditions: emitted %j', async (before, expected) => {
    const data = ag({
      conditions: [...filler(before), progressing(T0 - 60_000)],
    });
    expect(await detectActions(data)).toEqual({ status: 200, actions: expected });
  });
});

describe(`annotations considered: the first ${MAX_ANNOTATIONS}`, () => {
  it.each([
    [MAX_ANNOTATIONS - 1, [ACTION_CLEAR_TRACKING]],
    [MAX_ANNOTATIONS, []],
  ])(
    'a tracking annotation after %i others on a healthy AG: emitted %j',
    async (before, expected) => {
      const annotations: Record<string, string> = {};
      for (let i = 0; i < before; i++) annotations[`example.com/a${i}`] = 'v';
      annotations[ANNOTATION_ATTEMPTS] = '2';
      const data = ag({ conditions: [succeeded(T0 - 60_000)], annotations });
      expect(await detectActions(data)).toEqual({ status: 200, actions: expected });
    },
  );
});

describe(`annotation values considered: up to ${MAX_ANNOTATION_VALUE_LENGTH} characters`, () => {
  it.each([
    [MAX_ANNOTATION_VALUE_LENGTH, [ACTION_CLEAR_TRACKING]],
    [MAX_ANNOTATION_VALUE_LENGTH + 1, []],
  ])(
    'a tracking annotation of %i characters on a healthy AG: emitted %j',
    async (length, expected) => {
      const data = ag({
        conditions: [succeeded(T0 - 60_000)],
        annotations: { [ANNOTATION_ATTEMPTS]: 'x'.repeat(length) },
      });
      expect(await detectActions(data)).toEqual({ status: 200, actions: expected });
    },
  );
});

describe('names: Kubernetes DNS-1123 subdomains of at most 253 characters', () => {
  it.each([
    [253, 200],
    [254, 400],
  ])('force-drift: an action naming an AG of %i characters answers %i', async (length, status) => {
    const data = {
      namespace: NS,
      name: 'n'.repeat(length),
      resourceVersion: '1',
      attempts: 0,
      decidedAt: formatTimeNano(T0),
    };
    const answer = await post(
      'force-drift',
      binaryHeaders(ACTION_FORCE),
      Buffer.from(JSON.stringify(data)),
    );
    expect(answer.status).toBe(status);
  });
});
