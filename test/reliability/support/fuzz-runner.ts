// Runs one fast-check property against one function over real HTTP: every generated request is
// posted, and the answer and the API calls it caused are checked. Counts are reported at the end.

import fc from 'fast-check';
import type { KubeProxy, ProxyCall } from '../../support/kube-proxy.js';
import type { FuzzRequest } from './arbitraries/http-request.js';
import { createRawClient, type RawAnswer } from './raw-client.js';
import { heapUsedAfterGc, MiB } from './heap.js';

export const READ_VERBS = new Set(['get', 'list', 'watch']);

/** FUZZ_RUNS raises (or lowers) the number of cases per function; 10,000 by default. */
export function fuzzRuns(): number {
  const text = process.env['FUZZ_RUNS'];
  const n = text === undefined || text === '' ? 10_000 : Number(text);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`FUZZ_RUNS="${text}": expected a positive integer`);
  return n;
}

/** FUZZ_SEED replays a run; otherwise a fresh seed is printed with the report. */
export function fuzzSeed(): number {
  const text = process.env['FUZZ_SEED'];
  return text === undefined || text === ''
    ? Date.now() ^ (Math.random() * 0x7fffffff)
    : Number(text);
}

export interface FuzzOptions {
  readonly name: string;
  readonly url: string;
  readonly proxy: KubeProxy;
  readonly tag: string;
  readonly input: fc.Arbitrary<FuzzRequest>;
  readonly numRuns: number;
  readonly seed: number;
  /** A write the function may make for an input it answered 2xx. Nothing else may be written. */
  readonly allowedWrite: (call: ProxyCall, req: FuzzRequest) => boolean;
}

export interface FuzzReport {
  readonly cases: number;
  readonly seed: number;
  readonly ms: number;
  readonly byStatus: Record<string, number>;
  /** Answers by status and result word (what the inputs reached). */
  readonly byOutcome: Record<string, number>;
  /** API calls made, and writes made for inputs answered 2xx. */
  readonly apiCalls: number;
  readonly allowedWrites: number;
  /** The first failure, when the property failed. */
  readonly failure: string | undefined;
  readonly unhandledRejections: readonly string[];
  readonly heapWarmMiB: number;
  readonly heapEndMiB: number;
}

/** The result word of a function's answer, or the start of its error text. */
function outcomeWord(body: string): string {
  try {
    const parsed = JSON.parse(body) as { result?: unknown; error?: unknown };
    if (typeof parsed.result === 'string') return parsed.result;
    if (typeof parsed.error === 'string') return parsed.error.slice(0, 48);
  } catch {
    // not JSON
  }
  return body.slice(0, 48);
}

function describeAnswer(req: FuzzRequest, answer: RawAnswer | undefined, why: string): string {
  const body = req.body.subarray(0, 400).toString('utf8');
  return (
    `${why}\n  input: ${req.label}, ${req.body.length} bytes\n  headers: ${JSON.stringify(req.headers).slice(0, 600)}` +
    `\n  body: ${JSON.stringify(body)}${req.body.length > 400 ? '…' : ''}` +
    (answer !== undefined ? `\n  answer: ${answer.status} ${answer.body.slice(0, 300)}` : '')
  );
}

export async function runFuzz(opts: FuzzOptions): Promise<FuzzReport> {
  const client = createRawClient(opts.url);
  const byStatus: Record<string, number> = {};
  const byOutcome: Record<string, number> = {};
  const unhandled: string[] = [];
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason instanceof Error ? `${reason.name}: ${reason.message}` : String(reason));
  };
  process.on('unhandledRejection', onUnhandled);
  const warmupAt = Math.min(1000, Math.floor(opts.numRuns / 5));
  let heapWarm = heapUsedAfterGc();
  let cases = 0;
  let apiCalls = 0;
  let allowedWrites = 0;
  let failure: string | undefined;
  const started = Date.now();

  const property = fc.asyncProperty(opts.input, async (req) => {
    cases++;
    if (cases === warmupAt) heapWarm = heapUsedAfterGc();
    opts.proxy.clearCalls();
    let answer: RawAnswer;
    try {
      answer = await client.post(req.headers, req.body);
    } catch (e) {
      throw new Error(describeAnswer(req, undefined, `no answer: ${(e as Error).message}`), {
        cause: e,
      });
    }
    const calls = opts.proxy.callsMatching({ clientTag: opts.tag });
    const writes = calls.filter((c) => !READ_VERBS.has(c.verb));
    apiCalls += calls.length;
    byStatus[answer.status] = (byStatus[answer.status] ?? 0) + 1;
    const outcomeKey = `${answer.status} ${outcomeWord(answer.body)}`;
    byOutcome[outcomeKey] = (byOutcome[outcomeKey] ?? 0) + 1;

    const fail = (why: string): never => {
      throw new Error(describeAnswer(req, answer, why));
    };
    if (
      answer.status < 200 ||
      answer.status >= 500 ||
      (answer.status >= 300 && answer.status < 400)
    ) {
      fail(
        `answered ${answer.status}: only 2xx or 4xx are allowed while the API server is healthy`,
      );
    }
    if (answer.headerNames.some((h) => h.startsWith('ce-'))) {
      fail('answered with a CloudEvent (it would re-enter the Broker)');
    }
    const summary = writes
      .map((w) => `${w.verb} ${w.resource}/${w.subresource} ${w.name}`)
      .join(', ');
    if (answer.status >= 400 && writes.length > 0) {
      fail(`invalid input (answered ${answer.status}) caused writes: ${summary}`);
    }
    for (const w of writes) {
      if (!opts.allowedWrite(w, req)) fail(`write not allowed for this input: ${summary}`);
    }
    allowedWrites += writes.length;
  });

  const details = await fc.check(property, {
    numRuns: opts.numRuns,
    seed: opts.seed,
  });
  if (details.failed) {
    const err = details.errorInstance;
    failure =
      `${err instanceof Error ? err.message : String(err)}\n  (seed ${details.seed}, path ${details.counterexamplePath ?? ''}, ` +
      `after ${details.numRuns} runs and ${details.numShrinks} shrinks)`;
  }
  const heapEnd = heapUsedAfterGc();
  process.off('unhandledRejection', onUnhandled);
  client.close();
  return {
    cases,
    seed: opts.seed,
    ms: Date.now() - started,
    byStatus,
    byOutcome,
    apiCalls,
    allowedWrites,
    failure,
    unhandledRejections: unhandled,
    heapWarmMiB: heapWarm / MiB,
    heapEndMiB: heapEnd / MiB,
  };
}

export function printReport(name: string, r: FuzzReport): void {
  const statuses = Object.entries(r.byStatus)
    .map(([s, n]) => `${s}:${n}`)
    .join(' ');
  console.log(
    `[fuzz ${name}] cases run: ${r.cases} in ${(r.ms / 1000).toFixed(1)} s (seed ${r.seed}); ` +
      `answers ${statuses}; API calls ${r.apiCalls}, allowed writes ${r.allowedWrites}; ` +
      `heap after GC ${r.heapWarmMiB.toFixed(1)} MiB after warm-up -> ${r.heapEndMiB.toFixed(1)} MiB at the end; ` +
      `unhandled rejections ${r.unhandledRejections.length}\n  by outcome: ` +
      Object.entries(r.byOutcome)
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => `${k}:${n}`)
        .join(', '),
  );
}
