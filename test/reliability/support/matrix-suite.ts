// Wires matrix scenarios into vitest: one describe per API call, one test per fault, and a
// fault-free twin per call computed first. The caller prints the table after all of them.

import { beforeAll, describe, expect, it } from 'vitest';
import { faultCases } from './fault-cases.js';
import type { MatrixTable } from './fault-matrix.js';
import { runCell, runTwin, type MatrixEnv, type MatrixScenario } from './fault-matrix.js';

export function defineMatrix(opts: {
  env: () => MatrixEnv;
  table: MatrixTable;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  scenarios: readonly MatrixScenario<any>[];
  /** Run the cells of one call concurrently (they use disjoint objects and client tags). */
  concurrent: boolean;
}): void {
  for (const scenario of opts.scenarios) {
    describe(scenario.call, () => {
      let twin: unknown;
      beforeAll(async () => {
        twin = await runTwin(opts.env(), scenario);
      });
      const test = opts.concurrent ? it.concurrent : it;
      for (const fault of faultCases(scenario.write)) {
        test(`${fault.key}: redeliverable answer, contract kept, end state = fault-free twin`, async () => {
          const result = await runCell(opts.env(), scenario, fault, twin);
          opts.table.record(scenario.call, fault.key, result);
          expect(result.problems).toEqual([]);
        });
      }
    });
  }
}
