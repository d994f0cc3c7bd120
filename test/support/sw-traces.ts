// The recorded traces of the real source-watcher v2.1.0 (test/recorded/source-watcher-v2.1.0/,
// described by its README): JSON Lines, one record a line, each file checked against the folder's
// SHA256SUMS (support/carried-files.ts). A missing, changed or unlisted file is an error with a
// clear message, never a skip.

import { TRACES_DIR, verifiedFiles } from './carried-files.js';

export { TRACES_DIR } from './carried-files.js';

/** Every recorded trace file, checksums verified: name (e.g. `S1-create-healthy.jsonl`) → text. */
export function traceTexts(): Map<string, string> {
  return new Map(
    verifiedFiles(TRACES_DIR, (name) => name.endsWith('.jsonl')).map((f) => [
      f.name,
      f.bytes.toString('utf8'),
    ]),
  );
}

export interface TraceAg {
  metadata: {
    name: string;
    namespace: string;
    generation?: number;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    finalizers?: string[];
    managedFields?: { manager?: string; operation?: string; subresource?: string }[];
  };
  status?: {
    conditions?: {
      type: string;
      status: string;
      reason?: string;
      observedGeneration?: number;
    }[];
    inventory?: { digest: string }[];
    observedSourcesDigest?: string;
    lastHandledReconcileAt?: string;
  };
}

interface Timed {
  /** Seconds from the scenario's `scenario-start` mark (negative: setup). */
  tRel: number;
  seq: number;
}

export interface TraceMeta {
  rec: 'meta';
  scenario: string;
  ags: string[];
}

export interface TraceMark extends Timed {
  rec: 'mark';
  what: string;
}

export interface TraceAction extends Timed {
  rec: 'action';
  what: string;
  method?: string;
  path?: string;
  body?: unknown;
}

export interface TraceWatch extends Timed {
  rec: 'watch' | 'initial';
  type?: string;
  key: string;
  object: TraceAg;
}

export interface TraceRequest extends Timed {
  rec: 'request';
  from: string;
  key: string;
  verb: string;
  subresource: string;
  code: number;
  body?: unknown;
  bodySummary?: { statusKeys?: string[]; readyInBody?: string };
}

export type TraceRecord = TraceMark | TraceAction | TraceWatch | TraceRequest;

export interface Trace {
  file: string;
  meta: TraceMeta;
  /** Every timed record, in `seq` order. */
  records: TraceRecord[];
}

/** Load one trace file, e.g. `S1-create-healthy.jsonl`. Throws when it is missing or malformed. */
export function loadTrace(file: string): Trace {
  const path = `${TRACES_DIR}/${file}`;
  const text = traceTexts().get(file);
  if (text === undefined) {
    throw new Error(`source-watcher trace ${path} is not among the recorded traces`);
  }
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const parsed = lines.map((line, i) => {
    try {
      return JSON.parse(line) as { rec?: string };
    } catch (e) {
      throw new Error(`${path}:${i + 1}: not JSON (${(e as Error).message})`, { cause: e });
    }
  });
  const meta = parsed.find((r) => r.rec === 'meta') as TraceMeta | undefined;
  if (!meta || !Array.isArray(meta.ags)) throw new Error(`${path}: no meta record with ags`);
  const timed = new Set(['mark', 'action', 'watch', 'initial', 'request']);
  const records = parsed
    .filter((r): r is TraceRecord => typeof r.rec === 'string' && timed.has(r.rec))
    .sort((a, b) => a.seq - b.seq);
  return { file, meta, records };
}

export function marks(trace: Trace): TraceMark[] {
  return trace.records.filter((r): r is TraceMark => r.rec === 'mark');
}

export function markAt(trace: Trace, what: string): number {
  const mark = marks(trace).find((m) => m.what === what || m.what.startsWith(`${what} `));
  if (!mark) throw new Error(`${trace.file}: no '${what}' mark`);
  return mark.tRel;
}
