// One fuzz suite per function (a row of fuzz.test.ts): a real createApp on 127.0.0.1 with the real
// adapter, through the recording proxy, against the real API server; FUZZ_RUNS cases of hostile
// HTTP input. Each row's suite is a describe of its own: its cluster, proxy and function are set
// up before its case and closed after it.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '../../support/apiserver.js';
import type { ProxyCall } from '../../support/kube-proxy.js';
import type { FuzzRequest } from './arbitraries/http-request.js';
import { eventType, functionInput } from './arbitraries/http-request.js';
import { deleteAlarm } from '../../support/recovery-alarm.js';
import { startCountingSink, type CountingSink } from './counting-sink.js';
import {
  SettableClock,
  startFunction,
  type ApiFunctionName as FunctionName,
  type RunningFunction as FunctionServer,
} from '../../harness/functions.js';
import { functionFile } from './function-file.js';
import { fuzzRuns, fuzzSeed, printReport, runFuzz } from './fuzz-runner.js';

/** Heap growth allowed between the warm-up and the end of a run (after full GCs). */
export const HEAP_GROWTH_BOUND_MIB = 48;

/**
 * The event types for a function routed few kinds of events: mostly those it handles, now and
 * then one it is routed but ignores, and any type at all.
 */
export function mostlyHandledTypes(
  handled: readonly [string, ...string[]],
  ignored: string,
): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...handled) },
    { weight: 1, arbitrary: fc.constant(ignored) },
    { weight: 1, arbitrary: eventType() },
  );
}

/** A function the fuzz suite runs: what differs between the functions. */
export interface FuzzRow {
  readonly fn: FunctionName;
  /** The CloudEvent types its inputs claim (the rest of each input is generated alike). */
  readonly types: fc.Arbitrary<string>;
  /** A write the function may make for an input it answered 2xx. Nothing else may be written. */
  readonly allowedWrite: (call: ProxyCall, req: FuzzRequest) => boolean;
}

/** The allowedWrite of a function that may write nothing at all. */
export const NO_WRITE = (): boolean => false;

export function defineFuzzSuite(opts: FuzzRow): void {
  describe(`${opts.fn}: fuzzing the HTTP surface`, () => {
    const tag = `fuzz-${opts.fn}`;
    // Sweeps and resyncs see the whole cluster: start from an empty one so that every write a
    // valid input causes is attributable to that input.
    const { T0, kc, suite } = functionFile(tag, tag, 'ags-and-packagesources');
    let sink: CountingSink;
    let server: FunctionServer;
    const alarmName = uniqueName('fuzz-alarm');

    beforeAll(async () => {
      sink = await startCountingSink();
      server = await startFunction({
        fn: opts.fn,
        kubeConfig: suite.proxy.kubeConfig(tag),
        clock: new SettableClock(T0),
        sinkUrl: sink.url,
        env: { ALARM_NAME: alarmName },
      });
    });
    afterAll(async () => {
      await server?.close();
      await sink?.close();
      await deleteAlarm(kc, alarmName);
    });

    it('answers every input 2xx or 4xx, writes nothing for invalid input, keeps the heap flat', async () => {
      const numRuns = fuzzRuns();
      const report = await runFuzz({
        name: opts.fn,
        url: server.url,
        proxy: suite.proxy,
        tag,
        input: functionInput(T0, opts.types),
        numRuns,
        seed: fuzzSeed(),
        allowedWrite: opts.allowedWrite,
      });
      printReport(opts.fn, report);
      expect(report.failure).toBeUndefined();
      expect(report.cases).toBeGreaterThanOrEqual(numRuns);
      expect(report.unhandledRejections).toEqual([]);
      // Both kinds of answer were produced: the generator reaches the handlers, not only the parser.
      expect(Object.keys(report.byStatus).some((s) => s.startsWith('2'))).toBe(true);
      expect(Object.keys(report.byStatus).some((s) => s.startsWith('4'))).toBe(true);
      expect(report.heapEndMiB - report.heapWarmMiB).toBeLessThan(HEAP_GROWTH_BOUND_MIB);
    });
  });
}
