// P3's metrics row (issue 36, docs/adr/0059): the cost of metrics on detect's no-op path. The same
// detect build, the same event, under the same load, with the OTLP export on (an endpoint that
// answers 200, as a collector or Prometheus's receiver would; every delivery counted and flushed)
// and off (no OTEL_* variable: the SDK is not even imported). Alternating rounds; the ratio of
// the medians, target >= 0.95 (at most 5 % fewer events per second); and the server CPU per event
// on vs off, which the machine's load sways less.

import { realisticUpdate } from './events.js';
import { runLoad } from './load.js';
import { startCountingServer } from './counting-server.js';
import { startNoApiDetect } from './no-api-detect.js';
import { withFirstAnswer } from '../harness/functions.js';
import { median } from './stats.js';
import { sized } from './smoke.js';
import type { BenchContext, BenchRow } from './types.js';
import { ratioRow } from './types.js';

const CONNECTIONS = 10;
const measureSec = (): number => sized(5, 1);
const rounds = (): number => sized(6, 2);

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
    const rates: Record<string, number[]> = { [off.name]: [], [on.name]: [] };
    const cpu: Record<string, number[]> = { [off.name]: [], [on.name]: [] };
    for (let round = 0; round < rounds(); round++) {
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
            await load(1);
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
        rates[target.name]?.push(rate);
        cpu[target.name]?.push(cpuUs);
      }
    }
    const onRates = rates[on.name] ?? [];
    const offRates = rates[off.name] ?? [];
    const onCpu = cpu[on.name] ?? [];
    const offCpu = cpu[off.name] ?? [];
    const exports = collector.total();
    if (exports === 0) throw new Error('export on: the collector received no OTLP request');
    return [
      ratioRow({
        id: 'P3',
        metric: `detect no-op throughput, metrics exported over OTLP vs not (median of ${onRates.length})`,
        value: median(onRates),
        baseline: median(offRates),
        unit: 'req/s',
        target: 'ratio >= 0.95',
        minRatio: 0.95,
        detail: {
          onRuns: onRates.map(Math.round),
          offRuns: offRates.map(Math.round),
          otlpRequests: exports,
          connections: CONNECTIONS,
          measureSec: measureSec(),
        },
      }),
      // CPU per event is less swayed by the machine's load than the rate: the cost itself.
      ratioRow({
        id: 'P3',
        metric: `detect server CPU per no-op event, metrics exported vs not (median of ${onCpu.length})`,
        value: median(onCpu),
        baseline: median(offCpu),
        unit: 'us',
        target: 'report (the cost: ratio <= 1.05)',
        detail: { onRuns: onCpu.map(Math.round), offRuns: offCpu.map(Math.round) },
      }),
    ];
  } finally {
    await Promise.all([noApi.close(), collector.close()]);
  }
}
