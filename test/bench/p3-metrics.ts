// P3's metrics rows (issue 36, docs/adr/0059): the cost of metrics on detect's no-op path. The same
// detect build, the same event, under the same load, with the OTLP export on (an endpoint that
// answers 200, as a collector or Prometheus's receiver would; every delivery counted and flushed)
// and off (no OTEL_* variable: the SDK is not even imported). Alternating rounds, each after the
// warm-up (p3-load.ts). The cost is the server's CPU per event on vs off (target <= 1.05: at most
// 5 % more), which a shared machine's load sways far less than the rate; the rate ratio is
// reported beside it. The collector is a counting server in the bench's process: it gets one
// export a second (FLUSH_DELAY_MS), not one per event, so it takes no CPU from the server that
// matters. docs/adr/0069 records how the row was checked to show a real cost (a busy loop of
// 50 us per delivery, injected with the export on, read as a ratio of about 1.5).

import { realisticUpdate } from './events.js';
import { runLoad } from './load.js';
import { startCountingServer } from './counting-server.js';
import { startNoApiDetect } from './no-api-detect.js';
import { withFirstAnswer } from '../harness/functions.js';
import { medianOrNaN } from './stats.js';
import {
  CONNECTIONS,
  markNoisy,
  measureSec,
  pairedRounds,
  roundsDetail,
  spread,
  warmupSec,
} from './p3-load.js';
import type { BenchContext, BenchRow } from './types.js';
import { ratioRow } from './types.js';

export async function metricsCostRows(ctx: BenchContext): Promise<BenchRow[]> {
  const scripts = await ctx.scripts();
  const { body, headers } = realisticUpdate();
  const noApi = await startNoApiDetect();
  const collector = await startCountingServer(200);
  try {
    const off = { name: 'export off', env: noApi.env };
    const on = {
      name: 'export on',
      env: {
        ...noApi.env,
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${collector.url}/v1/metrics`,
      },
    };
    type One = { rate: number; cpuUs: number };
    const paired = await pairedRounds(async (round) => {
      const out: Record<string, One> = {};
      for (const target of round % 2 === 0 ? [off, on] : [on, off]) {
        const { rate, cpuUs } = await withFirstAnswer(
          scripts.detect,
          target.env,
          headers,
          body,
          async (server) => {
            const load = (durationSec: number) =>
              runLoad(ctx.root, {
                url: server.url,
                headers,
                body,
                connections: CONNECTIONS,
                durationSec,
              });
            await load(warmupSec());
            const cpuBefore = await server.cpuMs();
            const r = await load(measureSec());
            const cpuUs = (((await server.cpuMs()) - cpuBefore) * 1000) / Math.max(1, r.ok);
            if (r.non2xx > 0 || r.errors > 0)
              throw new Error(`${target.name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
            return { rate: r.rate, cpuUs };
          },
        );
        ctx.log(
          `  detect, metrics ${target.name}: ${rate.toFixed(0)} req/s, ${cpuUs.toFixed(0)} us CPU per event`,
        );
        out[target.name] = { rate, cpuUs };
      }
      return { on: out[on.name] as One, off: out[off.name] as One };
    }, ctx.log);
    const onRates = paired.kept.map((r) => r.on.rate);
    const offRates = paired.kept.map((r) => r.off.rate);
    const onCpu = paired.kept.map((r) => r.on.cpuUs);
    const offCpu = paired.kept.map((r) => r.off.cpuUs);
    const exports = collector.total();
    if (exports === 0) throw new Error('export on: the collector received no OTLP request');
    const cpuRatios = onCpu.map((c, i) => c / (offCpu[i] ?? NaN));
    const rateRatios = onRates.map((r, i) => r / (offRates[i] ?? NaN));
    const runs = {
      connections: CONNECTIONS,
      warmupSec: warmupSec(),
      measureSec: measureSec(),
      otlpRequests: exports,
      ...roundsDetail(paired),
    };
    return [
      // The cost itself: CPU per event is what the metrics add; the machine's load sways it less.
      ratioRow({
        id: 'P3',
        metric: `detect server CPU per no-op event, metrics exported over OTLP vs not (median of ${onCpu.length}; per-round ratio ${spread(cpuRatios)})`,
        value: medianOrNaN(onCpu),
        baseline: medianOrNaN(offCpu),
        unit: 'us',
        target: 'ratio <= 1.05',
        maxRatio: 1.05,
        detail: {
          ...runs,
          onRuns: onCpu.map(Math.round),
          offRuns: offCpu.map(Math.round),
          perRoundRatios: cpuRatios.map((r) => Math.round(r * 100) / 100),
        },
      }),
      ratioRow({
        id: 'P3',
        metric: `detect no-op throughput, metrics exported over OTLP vs not (median of ${onRates.length}; per-round ratio ${spread(rateRatios)})`,
        value: medianOrNaN(onRates),
        baseline: medianOrNaN(offRates),
        unit: 'req/s',
        target: 'report (the load sways it; cost: the CPU row)',
        detail: {
          ...runs,
          onRuns: onRates.map(Math.round),
          offRuns: offRates.map(Math.round),
          perRoundRatios: rateRatios.map((r) => Math.round(r * 100) / 100),
        },
      }),
    ].map((row) => markNoisy(row, paired));
  } finally {
    await Promise.all([noApi.close(), collector.close()]);
  }
}
