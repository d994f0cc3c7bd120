// Wires the fault matrix into vitest, one function at a time: a describe per function (its own
// namespace, proxy and sink, the cluster emptied first where its sweeps look), a describe per API
// call with its fault-free twin computed first, one test per fault; then, across every cell, the
// writes the function must never make and the count of cells run and passed. Each function's table
// is printed after its cells.

import type { CloudEventV1 } from 'cloudevents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiFunctionName as FunctionName } from '../../harness/functions.js';
import type { CallMatch, ProxyCall } from '../../support/kube-proxy.js';
import { faultCases, type FaultCase } from './fault-cases.js';
import {
  MatrixTable,
  runCell,
  runTwin,
  type Expectation,
  type MatrixEnv,
  type MatrixScenario,
  type Stage,
} from './fault-matrix.js';
import { functionFile, type EmptiedOf, type FunctionFile } from './function-file.js';
import { READ_VERBS } from './fuzz-runner.js';

/** Which call a cell hits: every given field must match; nth (1-based) among the matching calls. */
export type CallTarget<C> = (ctx: C) => { match: CallMatch; nth?: number };

/** What every call of one function shares; a call's row may name its own setup and event. */
export interface MatrixFixtures<C> {
  /** Clock advance before the redelivery (past the resume settle time where needed). */
  readonly redeliverAdvanceMs: number;
  /** Creates fresh objects for one run, for the rows that name no setup. */
  readonly setup?: () => Promise<C>;
  /** The event to deliver (and to redeliver unchanged), for the rows that name none. */
  readonly event: (ctx: C) => CloudEventV1<unknown>;
  /** Extra environment for the function (for example its own alarm name). */
  readonly env?: (ctx: C) => Record<string, string>;
  /** The end state, normalised so that a twin with other names compares equal. */
  readonly state: (ctx: C) => Promise<unknown>;
  /** Contract violations visible now; may compare with what it saw at earlier stages. */
  readonly check: (ctx: C, stage: Stage) => Promise<string[]>;
  readonly cleanup?: (ctx: C) => Promise<void>;
}

/** One API call of a function: a row of its matrix (its columns are the faults). */
export interface CallRow<C> {
  /** Row label, e.g. "AG claim patch". */
  readonly call: string;
  /** Writes also get the lost-answer ('after') faults. */
  readonly write: boolean;
  readonly setup?: () => Promise<C>;
  readonly event?: (ctx: C) => CloudEventV1<unknown>;
  readonly target: CallTarget<C>;
  readonly expect: (fault: FaultCase) => Expectation;
  /** Added to the fixtures' environment (its values win). */
  readonly env?: (ctx: C) => Record<string, string>;
  /**
   * Its cells see the whole cluster: they run one at a time. Otherwise the cells of one call run
   * together (they use disjoint objects and client tags).
   */
  readonly oneAtATime?: boolean;
}

/** The context type of a function's cells, as its fixtures set it up. */
export type CtxOf<F> = F extends MatrixFixtures<infer C> ? C : never;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyFixtures = MatrixFixtures<any>;

/** One function of the matrix: what differs between the functions. */
export interface FunctionMatrix<F extends AnyFixtures> {
  readonly fn: FunctionName;
  /** Its namespace's prefix. */
  readonly nsPrefix: string;
  /** What the cluster is emptied of first (sweeps and resyncs see every object in it). */
  readonly emptied: EmptiedOf;
  /** It emits to the suite's sink (the Broker stand-in). */
  readonly sink: boolean;
  readonly fixtures: (file: FunctionFile) => F;
  readonly calls: (fixtures: F, file: FunctionFile) => readonly CallRow<CtxOf<F>>[];
  /** The writes it must never make in any cell: "<fn> wrote no <what>". */
  readonly neverWrites: { readonly what: string; readonly is: (call: ProxyCall) => boolean };
  /** The cells its rows make (6 per read, 11 per write): a row lost is a count missed. */
  readonly cells: number;
  /** Its tests of faults beyond one call, on the same fixtures and proxy. */
  readonly more?: (fixtures: F, file: FunctionFile) => void;
}

/** A function's matrix, its context type hidden, for the table of every function. */
export interface MatrixRow {
  readonly fn: FunctionName;
  readonly define: () => void;
}

export const functionMatrix = <F extends AnyFixtures>(m: FunctionMatrix<F>): MatrixRow => ({
  fn: m.fn,
  define: () => defineFunctionMatrix(m),
});

export function defineFaultMatrix(rows: readonly MatrixRow[]): void {
  for (const row of rows) row.define();
}

function scenarioOf<C>(fixtures: MatrixFixtures<C>, row: CallRow<C>): MatrixScenario<C> {
  const setup = row.setup ?? fixtures.setup;
  if (setup === undefined) throw new Error(`${row.call}: neither the row nor its fixtures set up`);
  const { env: baseEnv, cleanup } = fixtures;
  const rowEnv = row.env;
  return {
    call: row.call,
    write: row.write,
    redeliverAdvanceMs: fixtures.redeliverAdvanceMs,
    setup,
    event: row.event ?? fixtures.event,
    target: row.target,
    ...(baseEnv !== undefined || rowEnv !== undefined
      ? { env: (ctx: C) => ({ ...baseEnv?.(ctx), ...rowEnv?.(ctx) }) }
      : {}),
    state: fixtures.state,
    check: fixtures.check,
    expect: row.expect,
    ...(cleanup !== undefined ? { cleanup } : {}),
  };
}

function defineFunctionMatrix<F extends AnyFixtures>(m: FunctionMatrix<F>): void {
  describe(m.fn, () => {
    const file = functionFile(`matrix-${m.fn}`, m.nsPrefix, m.emptied);
    const { suite } = file;
    const table = new MatrixTable(m.fn);
    afterAll(() => console.log(table.render()));
    const env = (): MatrixEnv => ({
      fn: m.fn,
      proxy: suite.proxy,
      t0: file.T0,
      ...(m.sink ? { sinkUrl: suite.sink.url } : {}),
    });
    const fixtures = m.fixtures(file);

    for (const row of m.calls(fixtures, file)) {
      const scenario = scenarioOf(fixtures, row);
      describe(scenario.call, () => {
        let twin: unknown;
        beforeAll(async () => {
          twin = await runTwin(env(), scenario);
        });
        const test = row.oneAtATime === true ? it : it.concurrent;
        for (const fault of faultCases(scenario.write)) {
          test(`${fault.key}: redeliverable answer, contract kept, end state = fault-free twin`, async () => {
            const result = await runCell(env(), scenario, fault, twin);
            table.record(scenario.call, fault.key, result);
            expect(result.problems).toEqual([]);
          });
        }
      });
    }

    m.more?.(fixtures, file);

    describe('across every cell', () => {
      it(`${m.fn} wrote no ${m.neverWrites.what}`, () => {
        const forbidden = suite.proxy.calls.filter(
          (c) => !READ_VERBS.has(c.verb) && m.neverWrites.is(c),
        );
        expect(suite.proxy.calls.length).toBeGreaterThan(0);
        expect(forbidden).toEqual([]);
      });

      it('ran every cell and every cell passed', () => {
        expect(table.counts()).toEqual({ run: m.cells, passed: m.cells });
      });
    });
  });
}
