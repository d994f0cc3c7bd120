// The fault matrix: for one API call of one function and one fault, run the event with the fault
// injected, check the answer and the invariants, lift the fault, redeliver the same event (with the
// clock advanced where the design needs it) and compare the end state with a fault-free twin.

import { isDeepStrictEqual } from 'node:util';
import type { CloudEventV1 } from 'cloudevents';
import type { KubeConfig } from '@kubernetes/client-node';
import { postEvent } from '../../support/http-events.js';
import type { CallMatch, KubeProxy } from '../../support/kube-proxy.js';
import {
  ALL_COLUMNS,
  addFaultOnNth,
  NORMAL_TIMEOUT_MS,
  timeoutFor,
  type FaultCase,
} from './fault-cases.js';
import {
  SettableClock,
  startFunction,
  type ApiFunctionName as FunctionName,
} from '../../harness/functions.js';

export interface Expectation {
  /** 503: the Broker redelivers. 200: the failure is benign (the function recovered in-request). */
  readonly status: 200 | 503;
  readonly why: string;
}

export type Stage = 'start' | 'after-fault' | 'end';

/** A cell the function cannot get past: 503 (`why`), the redelivery does it; slow is just slow. */
export const redelivered =
  (why: string) =>
  (f: FaultCase): Expectation =>
    f.label === 'slow' ? { status: 200, why: 'slow is just slow' } : { status: 503, why };

/**
 * A read after the delivery's first answer: a transient failure (500, 429, a timeout, a reset) is
 * read again in place (shared/kube/in-place-retry.ts, ADR 70), so the delivery completes; the other
 * columns as `otherwise`.
 */
export const readAgainInPlace =
  (otherwise: (f: FaultCase) => Expectation) =>
  (f: FaultCase): Expectation =>
    f.label === '500' || f.label === '429' || f.label === 'timeout' || f.label === 'reset'
      ? { status: 200, why: 'read again in place (ADR 70): the delivery completes' }
      : otherwise(f);

/** The faults a repeatable call is sent again in place after (shared/kube/in-place-retry.ts). */
const TRANSIENT_LABELS: readonly string[] = ['500', '429', 'timeout', 'reset'];

/**
 * A write's cells: a 409 is re-read within the request (`before`: the write failed; `after`: it
 * applied and its answer was lost, 200 unless `afterStatus`); the others as `redelivered`. A
 * repeatable write (a resourceVersion precondition, or a create naming its object: ADR 71) that
 * failed transiently is sent again in place: `before`, it lands; `after`, the first send ran and
 * the second meets it as a 409 does.
 */
export const conflictReread =
  (o: {
    before: string;
    after: string;
    afterStatus?: 200 | 503;
    otherwise: string;
    repeatable?: boolean;
  }) =>
  (f: FaultCase): Expectation => {
    if (o.repeatable === true && TRANSIENT_LABELS.includes(f.label)) {
      return f.phase === 'before'
        ? { status: 200, why: 'sent again in place (ADR 71): it lands' }
        : {
            status: o.afterStatus ?? 200,
            why: `sent again in place (ADR 71), meeting the first send (409, or 404 for a delete): ${o.after}`,
          };
    }
    if (f.label !== '409') return redelivered(o.otherwise)(f);
    return f.phase === 'before'
      ? { status: 200, why: o.before }
      : { status: o.afterStatus ?? 200, why: o.after };
  };

/** A cell's target: the `nth` (1-based, the first by default) get of the context's AG. */
export const agGet =
  (nth?: number) =>
  (ctx: { readonly ref: { readonly name: string } }): { match: CallMatch; nth?: number } => ({
    match: { verb: 'get', resource: 'artifactgenerators', name: ctx.ref.name },
    ...(nth !== undefined && { nth }),
  });

/** A cell's target: the (first) list of `resource`, cluster-wide (a sweep's or a resync's). */
export const listOf = (resource: string) => (): { match: CallMatch } => ({
  match: { verb: 'list', resource },
});

export interface MatrixScenario<C> {
  /** Row label, e.g. "AG claim patch". */
  readonly call: string;
  /** Writes also get the lost-answer ('after') faults. */
  readonly write: boolean;
  /** Clock advance before the redelivery (past the resume settle time where needed). */
  readonly redeliverAdvanceMs: number;
  /** Creates fresh objects for one run. */
  setup(): Promise<C>;
  /** The event to deliver (and to redeliver unchanged). */
  event(ctx: C): CloudEventV1<unknown>;
  /** Which call to hit: every given field must match; nth (1-based) among the matching calls. */
  target(ctx: C): { match: CallMatch; nth?: number };
  /** Extra environment for the function (for example its own alarm name). */
  env?(ctx: C): Record<string, string>;
  /** The end state, normalised so that a twin with other names compares equal. */
  state(ctx: C): Promise<unknown>;
  /** Contract violations visible now; may compare with what it saw at earlier stages. */
  check(ctx: C, stage: Stage): Promise<string[]>;
  expect(fault: FaultCase): Expectation;
  cleanup?(ctx: C): Promise<void>;
}

export interface MatrixEnv {
  readonly fn: FunctionName;
  readonly proxy: KubeProxy;
  /** The clock value every run starts at. */
  readonly t0: number;
  readonly sinkUrl?: string;
}

export interface CellResult {
  readonly ok: boolean;
  readonly first: number | undefined;
  readonly second: number | undefined;
  readonly problems: readonly string[];
}

let tagSeq = 0;
const nextTag = (prefix: string): string => `${prefix}-${++tagSeq}`;

async function deliver<C>(
  env: MatrixEnv,
  scenario: MatrixScenario<C>,
  ctx: C,
  event: CloudEventV1<unknown>,
  opts: { tag: string; now: number; timeoutMs: number },
): Promise<number> {
  const server = await startFunction({
    fn: env.fn,
    kubeConfig: env.proxy.kubeConfig(opts.tag) as KubeConfig,
    clock: new SettableClock(opts.now),
    requestTimeoutMs: opts.timeoutMs,
    ...(env.sinkUrl !== undefined ? { sinkUrl: env.sinkUrl } : {}),
    ...(scenario.env !== undefined ? { env: scenario.env(ctx) } : {}),
  });
  try {
    return (await postEvent(server.url, event)).status;
  } finally {
    await server.close();
  }
}

/** The fault-free run: deliver, advance, redeliver. Returns the normalised end state. */
export async function runTwin<C>(env: MatrixEnv, scenario: MatrixScenario<C>): Promise<unknown> {
  const ctx = await scenario.setup();
  try {
    const event = scenario.event(ctx);
    const tag = nextTag(`twin-${env.fn}`);
    const first = await deliver(env, scenario, ctx, event, {
      tag,
      now: env.t0,
      timeoutMs: NORMAL_TIMEOUT_MS,
    });
    const second = await deliver(env, scenario, ctx, event, {
      tag,
      now: env.t0 + scenario.redeliverAdvanceMs,
      timeoutMs: NORMAL_TIMEOUT_MS,
    });
    if (first !== 200 || second !== 200) {
      throw new Error(`${scenario.call}: fault-free run answered ${first} then ${second}`);
    }
    const problems = await scenario.check(ctx, 'end');
    if (problems.length > 0)
      throw new Error(`${scenario.call}: fault-free run: ${problems.join('; ')}`);
    return await scenario.state(ctx);
  } finally {
    await scenario.cleanup?.(ctx);
  }
}

export async function runCell<C>(
  env: MatrixEnv,
  scenario: MatrixScenario<C>,
  fault: FaultCase,
  twinState: unknown,
): Promise<CellResult> {
  const problems: string[] = [];
  const ctx = await scenario.setup();
  let first: number | undefined;
  let second: number | undefined;
  try {
    problems.push(...(await scenario.check(ctx, 'start')));
    const event = scenario.event(ctx);
    const tag = nextTag(`cell-${env.fn}`);
    const { match, nth } = scenario.target(ctx);
    const handles = addFaultOnNth(env.proxy, nth ?? 1, fault.rule({ ...match, clientTag: tag }));
    try {
      first = await deliver(env, scenario, ctx, event, {
        tag,
        now: env.t0,
        timeoutMs: timeoutFor(fault),
      });
    } finally {
      for (const h of handles) h.remove();
    }
    const hit = handles[handles.length - 1]?.applied ?? 0;
    if (hit < 1) problems.push('the fault never hit the call (the cell tested nothing)');
    const expected = scenario.expect(fault);
    if (first !== expected.status) {
      problems.push(`answered ${first}, expected ${expected.status} (${expected.why})`);
    }
    problems.push(
      ...(await scenario.check(ctx, 'after-fault')).map((p) => `after the fault: ${p}`),
    );

    second = await deliver(env, scenario, ctx, event, {
      tag: `${tag}-redelivery`,
      now: env.t0 + scenario.redeliverAdvanceMs,
      timeoutMs: NORMAL_TIMEOUT_MS,
    });
    if (second !== 200) problems.push(`the redelivery answered ${second}, expected 200`);
    problems.push(...(await scenario.check(ctx, 'end')).map((p) => `at the end: ${p}`));
    const end = await scenario.state(ctx);
    if (!isDeepStrictEqual(end, twinState)) {
      problems.push(
        `end state differs from the fault-free twin:\n    got  ${JSON.stringify(end)}\n    twin ${JSON.stringify(twinState)}`,
      );
    }
  } catch (e) {
    problems.push(`error: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    await scenario.cleanup?.(ctx).catch(() => undefined);
  }
  return { ok: problems.length === 0, first, second, problems };
}

/** Collects cell results and prints them as a table. */
export class MatrixTable {
  private readonly rows = new Map<string, Map<string, CellResult>>();

  constructor(private readonly fn: FunctionName) {}

  record(call: string, column: string, result: CellResult): void {
    let row = this.rows.get(call);
    if (row === undefined) {
      row = new Map();
      this.rows.set(call, row);
    }
    row.set(column, result);
  }

  counts(): { run: number; passed: number } {
    let run = 0;
    let passed = 0;
    for (const row of this.rows.values()) {
      for (const cell of row.values()) {
        run++;
        if (cell.ok) passed++;
      }
    }
    return { run, passed };
  }

  render(): string {
    const callWidth = Math.max(4, ...[...this.rows.keys()].map((k) => k.length));
    const colWidth = Math.max(...ALL_COLUMNS.map((c) => c.length), 9);
    const pad = (s: string, n: number): string => s.padEnd(n);
    const lines = [
      `fault matrix: ${this.fn} (cell: first answer -> redelivery answer; ✓ contract held, ✗ violated; - not a write)`,
      `${pad('call', callWidth)} | ${ALL_COLUMNS.map((c) => pad(c, colWidth)).join(' | ')}`,
      `${'-'.repeat(callWidth)}-+-${ALL_COLUMNS.map(() => '-'.repeat(colWidth)).join('-+-')}`,
    ];
    for (const [call, row] of this.rows) {
      const cells = ALL_COLUMNS.map((c) => {
        const r = row.get(c);
        if (r === undefined) return pad('-', colWidth);
        return pad(`${r.ok ? '✓' : '✗'} ${r.first ?? '?'}->${r.second ?? '?'}`, colWidth);
      });
      lines.push(`${pad(call, callWidth)} | ${cells.join(' | ')}`);
    }
    const { run, passed } = this.counts();
    lines.push(`${this.fn}: cells run ${run}, cells passed ${passed}`);
    return lines.join('\n');
  }
}
