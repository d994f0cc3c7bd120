// P7: resident memory of detect after EVENTS no-op events, against the echo baseline after the
// same load. Each server is fresh; the load comes from autocannon in a separate process. The
// no-op path never loads @kubernetes/client-node; the resync wake-up does (issue 21), so detect's
// RSS right after its first sweep is a row too (resync-wake.ts).

import { runLoad } from './load.js';
import { measureDetectVsEcho, type Measure } from './detect-vs-echo.js';
import { withFirstAnswer } from '../harness/functions.js';
import { mean } from './stats.js';
import { measureResyncWake } from './resync-wake.js';
import { sized } from './smoke.js';
import { ratioRow, REPORT_ONLY, valueRow, type BenchContext, type BenchModule } from './types.js';

const EVENTS_FULL = 10_000;
const events = (): number => sized(EVENTS_FULL, 1_000);
const ROUNDS = 2;
const SETTLE_MS = 1000;

const rssAfterLoad =
  (ctx: BenchContext): Measure<{ startKb: number; afterKb: number }> =>
  (script, env, headers, body) => {
    const EVENTS = events();
    return withFirstAnswer(script, env, headers, body, async (server) => {
      const startKb = await server.rssKb();
      const load = await runLoad(ctx.root, {
        url: server.url,
        headers,
        body,
        connections: 10,
        amount: EVENTS,
      });
      if (load.ok !== EVENTS) {
        throw new Error(
          `expected ${EVENTS} answered events, got ${load.ok} (${load.non2xx} non-2xx)`,
        );
      }
      await new Promise((r) => setTimeout(r, SETTLE_MS));
      return { startKb, afterKb: await server.rssKb() };
    });
  };

export const p7: BenchModule = {
  id: 'P7',
  title: 'memory',
  async run(ctx) {
    const { detect, echo, detectApiCalls } = await measureDetectVsEcho(
      ctx,
      ROUNDS,
      rssAfterLoad(ctx),
    );
    if (detectApiCalls !== 0) throw new Error('detect called the API during the memory run');
    const mib = (kb: number): number => kb / 1024;
    ctx.log(`  detect RSS after: ${detect.map((d) => mib(d.afterKb).toFixed(1)).join(' ')} MiB`);
    ctx.log(`  echo RSS after:   ${echo.map((d) => mib(d.afterKb).toFixed(1)).join(' ')} MiB`);
    const imports = await ctx.importCosts();
    const wake = await measureResyncWake(ctx, 'bench-p7', ROUNDS);
    const wakeMiB = wake.samples.map((x) => mib(x.rssKb));
    ctx.log(
      `  detect RSS after its first resync sweep: ${wakeMiB.map((m) => m.toFixed(1)).join(' ')} MiB`,
    );
    return [
      ratioRow({
        id: 'P7',
        metric: `RSS right after the first resync sweep, ${wake.ags} AGs (client-node loaded; baseline: echo after one event)`,
        value: mean(wakeMiB),
        baseline: mib(mean(echo.map((d) => d.startKb))),
        unit: 'MiB',
        target: 'report',
        detail: { wakeMiB, ags: wake.ags },
      }),
      ratioRow({
        id: 'P7',
        metric: `RSS after ${events().toLocaleString('en-US')} no-op events`,
        value: mib(mean(detect.map((d) => d.afterKb))),
        baseline: mib(mean(echo.map((d) => d.afterKb))),
        unit: 'MiB',
        target: 'ratio <= 1.5',
        maxRatio: 1.5,
        detail: {
          detectStartMiB: mean(detect.map((d) => mib(d.startKb))),
          echoStartMiB: mean(echo.map((d) => mib(d.startKb))),
          rounds: ROUNDS,
        },
      }),
      valueRow({
        id: 'P7',
        metric: 'diagnostic: RSS added by importing @kubernetes/client-node',
        value: imports['@kubernetes/client-node']?.rssMiB ?? 0,
        unit: 'MiB',
        ...REPORT_ONLY,
        detail: { imports },
      }),
    ];
  },
};
