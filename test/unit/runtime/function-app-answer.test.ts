// A delivery's answer, over real HTTP: the function app writes `{"result": …}` from a body it
// serialised once per result word (function-app.ts, answerWriter; bench P3). Each answer must be
// the one express's res.status().json() writes: the same status, body, Content-Type and
// Content-Length, whether the handler answered synchronously, asynchronously or threw, and for a
// result word past the kept bound too.

import http from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import express from 'express';
import { createFunctionApp, type EventHandler } from '../../../shared/runtime/function-app.js';
import { createLogger } from '../../../shared/runtime/logger.js';
import {
  handled,
  ignored,
  malformed,
  retryLater,
  type Outcome,
} from '../../../shared/runtime/outcome.js';
import { TransientError } from '../../../shared/kube/errors.js';
import { serve, type Served } from '../../harness/functions/serve.js';
import { cloudEvent } from '../../support/http-events.js';
import { HTTP } from 'cloudevents';

const servers: Served[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** POSTs one binary-mode CloudEvent and keeps the raw answer (headers as sent). */
function post(url: string): Promise<Raw> {
  const message = HTTP.binary(cloudEvent({ type: 'test.answer', data: { a: 1 } }));
  const body = String(message.body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', headers: message.headers as Record<string, string>, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The headers an answer is compared on (Date and Connection vary with the moment and agent). */
const compared = (r: Raw) => ({
  status: r.status,
  body: r.body,
  contentType: r.headers['content-type'],
  contentLength: r.headers['content-length'],
  etag: r.headers['etag'],
  poweredBy: r.headers['x-powered-by'],
});

async function served(listener: http.RequestListener): Promise<Served> {
  const s = await serve(listener);
  servers.push(s);
  return s;
}

/** express answering `outcome` with res.json, as the function app did before answerWriter. */
async function expressReference(outcome: Outcome): Promise<Served> {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.post('/', (_req, res) => {
    res.status(outcome.status).json({ result: outcome.result });
  });
  return served(app);
}

async function functionApp(handle: EventHandler): Promise<Served> {
  return served(
    createFunctionApp({ logger: createLogger({ name: 'answer', level: 'silent' }), handle }),
  );
}

describe('a delivery answer is the one express res.json writes', () => {
  it.each<[string, Outcome, EventHandler]>([
    ['a synchronous 200', handled('healthy'), () => handled('healthy')],
    ['a synchronous 200, ignored', ignored('delete'), () => ignored('delete')],
    ['a synchronous 400', malformed('malformed-data'), () => malformed('malformed-data')],
    ['an asynchronous 200', handled('forced'), () => Promise.resolve(handled('forced'))],
    ['an asynchronous 503', retryLater('history'), () => Promise.resolve(retryLater('history'))],
    [
      'a thrown Transient error (503)',
      retryLater('kube-transient'),
      () => Promise.reject(new TransientError('etcd timeout', 500)),
    ],
    [
      'a thrown error that is no Kubernetes error (500)',
      { status: 500, result: 'internal-error' },
      () => Promise.reject(new Error('bug')),
    ],
    [
      'a result word with characters JSON escapes',
      handled('quote " and ü'),
      () => handled('quote " and ü'),
    ],
  ])('%s', async (_name, outcome, handle) => {
    const app = await functionApp(handle);
    const reference = await expressReference(outcome);
    // Twice: the first answer serialises the body, the second is the kept one.
    const first = compared(await post(app.url));
    const second = compared(await post(app.url));
    const expected = compared(await post(reference.url));
    expect(first).toEqual(expected);
    expect(second).toEqual(expected);
    expect(JSON.parse(first.body)).toEqual({ result: outcome.result });
  });

  it('result words past the kept bound still answer each with its own body', async () => {
    let n = 0;
    const app = await functionApp(() => handled(`word-${n++}`));
    const answers: Raw[] = [];
    for (let i = 0; i < 300; i++) answers.push(await post(app.url));
    expect(answers.map((a) => JSON.parse(a.body) as unknown)).toEqual(
      Array.from({ length: 300 }, (_, i) => ({ result: `word-${i}` })),
    );
    for (const a of answers) {
      expect(a.headers['content-length']).toBe(String(Buffer.byteLength(a.body)));
    }
  });
});
