// P4: cold start, from process spawn to the first CloudEvent answered, for detect (bundled, as the
// image runs it: docs/adr/0058)
// and the echo baseline, alternating, median of RUNS runs each. That first event is a no-op AG
// update, which never loads @kubernetes/client-node; the deployed detect is mostly woken by the
// resync instead, which loads it at once: its row is spawn -> the sweep answered, against the real
// test API server (resync-wake.ts; issue 21).

import { measureDetectVsEcho, type Measure } from './detect-vs-echo.js';
import { withFirstAnswer } from '../harness/functions.js';
import { measureBundledClientImport } from './import-cost.js';
import { median } from './stats.js';
import { measureResyncWake } from './resync-wake.js';
import { sized } from './smoke.js';
import { ratioRow, REPORT_ONLY, valueRow, type BenchModule } from './types.js';

const runs = (): number => sized(21, 3);
const wakeRuns = (): number => sized(7, 1);

const coldStartMs: Measure<number> = (script, env, headers, body) =>
  withFirstAnswer(script, env, headers, body, (_, ms) => Promise.resolve(ms));

export const p4: BenchModule = {
  id: 'P4',
  title: 'cold start',
  async run(ctx) {
    const RUNS = runs();
    const { detect: detectMs, echo: echoMs } = await measureDetectVsEcho(ctx, RUNS, coldStartMs);
    const round = (xs: number[]): number[] => xs.map((x) => Math.round(x));
    ctx.log(`  detect: ${round(detectMs).join(' ')} ms`);
    ctx.log(`  echo:   ${round(echoMs).join(' ')} ms`);
    const imports = await ctx.importCosts();
    const clientNode = imports['@kubernetes/client-node'];
    // What the bundled detect pays for the client on its cold path (its first API call).
    const bundledClient = await measureBundledClientImport(
      ctx.root,
      (await ctx.scripts()).detectEnv,
    );
    const wake = await measureResyncWake(ctx, 'bench-p4', wakeRuns());
    const wakeMs = wake.samples.map((x) => x.ms);
    ctx.log(`  resync wake-up: ${round(wakeMs).join(' ')} ms`);
    return [
      ratioRow({
        id: 'P4',
        metric: `cold start to the first resync sweep answered, ${wake.ags} AGs, real API server (median of ${wakeMs.length}; baseline: echo's first event)`,
        value: median(wakeMs),
        baseline: median(echoMs),
        unit: 'ms',
        target: 'ratio <= 1.5',
        maxRatio: 1.5,
        detail: { wakeMs: round(wakeMs), ags: wake.ags, loadsClientNode: true },
      }),
      ratioRow({
        id: 'P4',
        metric: `cold start to first event answered (median of ${RUNS})`,
        value: median(detectMs),
        baseline: median(echoMs),
        unit: 'ms',
        target: 'ratio <= 1.2',
        maxRatio: 1.2,
        detail: { detectMs: round(detectMs), echoMs: round(echoMs), importMs: imports },
      }),
      valueRow({
        id: 'P4',
        metric:
          "import time of the Kubernetes client on the bundled detect's cold path (its first API call: the chunks with client-node as far as it is used)",
        value: bundledClient.ms,
        unit: 'ms',
        target: '<= 100',
        pass: bundledClient.ms <= 100,
        detail: { ...bundledClient },
      }),
      valueRow({
        id: 'P4',
        metric: 'diagnostic: import time of the whole @kubernetes/client-node package (unbundled)',
        value: clientNode?.ms ?? 0,
        unit: 'ms',
        ...REPORT_ONLY,
        detail: { imports },
      }),
    ];
  },
};
