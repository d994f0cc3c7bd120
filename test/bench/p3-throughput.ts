// P3: no-op event throughput of detect (healthy-AG updates with a realistic ~8 KB AG) against the
// minimum any CloudEvent function does on that path: express, the raw body, and detect's own
// CloudEvent parser (test/bench/parse-echo-server.ts; issue 21: the SDK-parsing echo measured the
// two parsers, not detect). Loaded over loopback HTTP by autocannon in a separate process,
// alternating rounds; the ratio is reported with its spread over the rounds, and the server CPU
// per event with detect's overhead in microseconds. Also: detect's API calls and emits during the
// load (must be 0), and surface-stalled's rate for an in-step PackageSource (against the real test
// API server), against the same baseline.

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { functionAudience } from '../../shared/core/access/sender-auth.js';
import { OidcTokenProvider, oidcSubject } from '../harness/knative/index.js';
import { withToken } from '../setup/cluster-rbac.js';
import { RECOVERY_NAMESPACE } from '../support/manifests.js';
import { agUpdateHeaders, realisticUpdate } from './events.js';
import { runLoad, type LoadResult } from './load.js';
import { ECHO_ENV, startNoApiDetect } from './no-api-detect.js';
import { postOnce, spawnServer, timeToFirstAnswer, withFirstAnswer } from '../harness/functions.js';
import { BENCH_OWNER_ENV, benchCluster } from './bench-system.js';
import { createHealthyAg } from '../support/raw-kube.js';
import { expectResult, untilResult } from './answers.js';
import { medianOrNaN } from './stats.js';
import { metricsCostRows } from './p3-metrics.js';
import {
  CONNECTIONS,
  markNoisy,
  measureSec,
  pairedRounds,
  roundsDetail,
  spread,
  warmupSec,
} from './p3-load.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';
import { ratioRow, REPORT_ONLY, unmeasuredRow, valueRow } from './types.js';

interface Target {
  readonly name: string;
  readonly script: string;
  readonly env: Record<string, string>;
}

interface Measured extends LoadResult {
  /** Server CPU (user + system) per answered event during the measured load, microseconds. */
  readonly cpuUsPerEvent: number;
}

/** Spawns the server, checks it answers the event with 200, warms it up, measures. */
function measure(
  ctx: BenchContext,
  target: Target,
  headers: Record<string, string>,
  body: string,
): Promise<Measured> {
  return withFirstAnswer(target.script, target.env, headers, body, async (server) => {
    const load = (durationSec: number): Promise<LoadResult> =>
      runLoad(ctx.root, { url: server.url, headers, body, connections: CONNECTIONS, durationSec });
    await load(warmupSec());
    const cpuBefore = await server.cpuMs();
    const result = await load(measureSec());
    if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
      throw new Error(
        `${target.name}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts under load`,
      );
    }
    const cpuUsPerEvent = (((await server.cpuMs()) - cpuBefore) * 1000) / Math.max(1, result.ok);
    ctx.log(
      `  ${target.name}: ${result.rate.toFixed(0)} req/s (p99 ${result.latencyP99Ms} ms, ` +
        `${cpuUsPerEvent.toFixed(0)} us CPU per event)`,
    );
    return { ...result, cpuUsPerEvent };
  });
}

async function detectRows(ctx: BenchContext): Promise<BenchRow[]> {
  const scripts = await ctx.scripts();
  const { body, headers } = realisticUpdate();
  const noApi = await startNoApiDetect();
  try {
    const detect: Target = { name: 'detect', script: scripts.detect, env: noApi.env };
    const echo: Target = { name: 'parser', script: scripts.parseEcho, env: ECHO_ENV };

    // The event really takes detect's no-op path.
    const probe = await spawnServer(detect.script, detect.env);
    try {
      const { answer } = await timeToFirstAnswer(probe, headers, body);
      expectResult('detect (the no-op path)', answer, 'healthy');
    } finally {
      await probe.stop();
    }

    const paired = await pairedRounds(async (round) => {
      const out: Record<string, Measured> = {};
      for (const target of round % 2 === 0 ? [echo, detect] : [detect, echo])
        out[target.name] = await measure(ctx, target, headers, body);
      return { detect: out['detect'] as Measured, parser: out['parser'] as Measured };
    }, ctx.log);
    const n = paired.kept.length;
    const dRates = paired.kept.map((r) => r.detect.rate);
    const pRates = paired.kept.map((r) => r.parser.rate);
    const dCpu = paired.kept.map((r) => r.detect.cpuUsPerEvent);
    const pCpu = paired.kept.map((r) => r.parser.cpuUsPerEvent);
    // Round i measured both servers back to back: its ratio carries that moment's load.
    const rateRatios = dRates.map((r, i) => r / (pRates[i] ?? NaN));
    const cpuRatios = dCpu.map((c, i) => c / (pCpu[i] ?? NaN));
    const overheadUs = dCpu.map((c, i) => c - (pCpu[i] ?? NaN));
    const apiCalls = noApi.api.total();
    const emitted = noApi.sink.total();
    const loadDetail = {
      bodyBytes: Buffer.byteLength(body),
      connections: CONNECTIONS,
      warmupSec: warmupSec(),
      measureSec: measureSec(),
      rounds: n,
      ...roundsDetail(paired),
      baseline:
        "express + raw body + parseCloudEvent (detect's parser), 200; bundled as detect is (toolchain/bundle.mjs)",
    };
    const rows = [
      ratioRow({
        id: 'P3',
        metric: `detect no-op throughput vs detect's parser alone (median of ${n}; per-round ratio ${spread(rateRatios)})`,
        value: medianOrNaN(dRates),
        baseline: medianOrNaN(pRates),
        unit: 'req/s',
        target: 'ratio >= 0.9',
        minRatio: 0.9,
        detail: {
          ...loadDetail,
          detectRuns: dRates.map(Math.round),
          parserRuns: pRates.map(Math.round),
          perRoundRatios: rateRatios.map((r) => Math.round(r * 100) / 100),
          medianOfRoundRatios: medianOrNaN(rateRatios),
        },
      }),
      ratioRow({
        id: 'P3',
        metric: `server CPU per no-op event, detect vs parser alone (median; per-round ratio ${spread(cpuRatios)})`,
        value: medianOrNaN(dCpu),
        baseline: medianOrNaN(pCpu),
        unit: 'us',
        target: 'report',
        detail: {
          detectRuns: dCpu.map(Math.round),
          parserRuns: pCpu.map(Math.round),
          perRoundRatios: cpuRatios.map((r) => Math.round(r * 100) / 100),
        },
      }),
      valueRow({
        id: 'P3',
        metric: `detect's own CPU per no-op event beyond the parser (median of ${n} rounds)`,
        value: medianOrNaN(overheadUs),
        unit: 'us',
        ...REPORT_ONLY,
        detail: {
          perRoundUs: overheadUs.map(Math.round),
          minUs: Math.round(Math.min(...overheadUs)),
          maxUs: Math.round(Math.max(...overheadUs)),
        },
      }),
    ].map((row) => markNoisy(row, paired));
    return [
      ...rows,
      valueRow({
        id: 'P3',
        metric: 'detect API calls during the no-op load',
        value: apiCalls,
        unit: 'calls',
        target: '0 (and 0 emits)',
        pass: apiCalls === 0 && emitted === 0,
        detail: { apiCalls: Object.fromEntries(noApi.api.seen), emitted },
      }),
    ];
  } finally {
    await noApi.close();
  }
}

async function surfaceStalledRow(ctx: BenchContext): Promise<BenchRow> {
  const metric = 'surface-stalled rate, in-step PackageSource, vs the parser alone';
  let cluster;
  try {
    cluster = await benchCluster(ctx);
  } catch (e) {
    ctx.log(`  test API server unavailable: ${(e as Error).message.split('\n')[0] ?? ''}`);
    return unmeasuredRow('P3', metric, 'report', 'TODO: needs API server');
  }
  const scripts = await ctx.scripts();
  const { server, raw } = cluster;
  const namespace = 'bench-p3';
  const name = `bench-p3-${randomBytes(4).toString('hex')}`;
  const ag = await createHealthyAg(raw, namespace, name, { owned: true });
  const body = JSON.stringify(ag);
  const headers = agUpdateHeaders(ag);
  const ss: Target = {
    name: 'surface-stalled',
    script: scripts.surfaceStalled,
    env: { KUBECONFIG: server.kubeconfigPath, LOG_LEVEL: 'warn', ...BENCH_OWNER_ENV },
  };
  const echo: Target = { name: 'parser', script: scripts.parseEcho, env: ECHO_ENV };
  try {
    // Bring the PackageSource in step, then wait until the cached reads say so.
    const probe = await spawnServer(ss.script, ss.env);
    try {
      await untilResult(
        'surface-stalled (the PackageSource in step)',
        'in-step',
        () => postOnce(probe.url, headers, body),
        (await timeToFirstAnswer(probe, headers, body)).answer,
      );
    } finally {
      await probe.stop();
    }
    const before = (await raw.getPackageSource(name)).metadata?.resourceVersion;
    const echoRate = (await measure(ctx, echo, headers, body)).rate;
    const ssRate = (await measure(ctx, ss, headers, body)).rate;
    const after = (await raw.getPackageSource(name)).metadata?.resourceVersion;
    if (before !== after) throw new Error('the PackageSource was written during the in-step load');
    // No ratio bound: an informational row (pass null).
    return ratioRow({
      id: 'P3',
      metric,
      value: ssRate,
      baseline: echoRate,
      unit: 'req/s',
      target: 'report',
      detail: { bodyBytes: Buffer.byteLength(body), packageSourceWrites: 0 },
    });
  } finally {
    await raw.deleteAllAgs(namespace);
    await raw.deletePackageSource(name);
  }
}

/**
 * detect's no-op rate with sender authentication on (RECOVERY_AUTH=oidc, docs/adr/0056) against
 * the same detect with it off, alternating rounds in one run: every request carries one real
 * Trigger token (TokenRequest on the bench's API server), which detect reviews once as its own
 * ServiceAccount and then finds in its cache. The ratio is the check's cost on the warm path.
 */
async function authRows(ctx: BenchContext): Promise<BenchRow[]> {
  const metric = 'detect no-op throughput, sender authentication on vs off';
  let cluster;
  try {
    cluster = await benchCluster(ctx);
  } catch (e) {
    ctx.log(`  test API server unavailable: ${(e as Error).message.split('\n')[0] ?? ''}`);
    return [unmeasuredRow('P3', metric, 'ratio >= 0.9', 'TODO: needs API server')];
  }
  const { server, kc } = cluster;
  const scripts = await ctx.scripts();
  const { body, headers } = realisticUpdate();
  const audience = functionAudience('detect');
  const sender = { group: 'eventing.knative.dev', kind: 'Trigger', name: 'detect-ag-update' };
  const token = await new OidcTokenProvider({
    kubeConfig: kc,
    namespace: RECOVERY_NAMESPACE,
  }).tokenFor(sender, audience);
  const dir = await mkdtemp(join(tmpdir(), 'bench-p3-auth-'));
  // detect reviews tokens as itself (its ClusterRole from knative/).
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(
    kubeconfig,
    withToken(kc, server.serviceAccountTokens.detect, 'detect').exportConfig(),
  );
  const noApi = await startNoApiDetect();
  try {
    const off: Target = { name: 'auth off', script: scripts.detect, env: noApi.env };
    const on: Target = {
      name: 'auth on',
      script: scripts.detect,
      env: {
        ...noApi.env,
        KUBECONFIG: kubeconfig,
        RECOVERY_AUTH: 'oidc',
        RECOVERY_AUTH_AUDIENCE: audience,
        RECOVERY_AUTH_SENDERS: oidcSubject(
          RECOVERY_NAMESPACE,
          sender.group,
          sender.kind,
          sender.name,
        ),
      },
    };
    const bearerHeaders = { ...headers, authorization: `Bearer ${token}` };
    // The check is on: no token is 401; the token takes the no-op path.
    const probe = await spawnServer(on.script, on.env);
    try {
      const refused = (await timeToFirstAnswer(probe, headers, body)).answer;
      if (refused.status !== 401)
        throw new Error(`auth on: no token answered ${refused.status}, not 401`);
      expectResult(
        'detect, auth on (the no-op path)',
        await postOnce(probe.url, bearerHeaders, body),
        'healthy',
      );
    } finally {
      await probe.stop();
    }
    const paired = await pairedRounds(async (round) => {
      const out: Partial<Record<'on' | 'off', Measured>> = {};
      for (const [key, target, hdrs] of round % 2 === 0
        ? ([
            ['off', off, headers],
            ['on', on, bearerHeaders],
          ] as const)
        : ([
            ['on', on, bearerHeaders],
            ['off', off, headers],
          ] as const))
        out[key] = await measure(ctx, target, hdrs, body);
      return out as Record<'on' | 'off', Measured>;
    }, ctx.log);
    const n = paired.kept.length;
    const onRates = paired.kept.map((r) => r.on.rate);
    const offRates = paired.kept.map((r) => r.off.rate);
    const ratios = onRates.map((r, i) => r / (offRates[i] ?? NaN));
    const onCpu = paired.kept.map((r) => r.on.cpuUsPerEvent);
    const offCpu = paired.kept.map((r) => r.off.cpuUsPerEvent);
    const cpuRatios = onCpu.map((c, i) => c / (offCpu[i] ?? NaN));
    const throughput = ratioRow({
      id: 'P3',
      metric: `${metric} (median of ${n}); per-round ratio ${spread(ratios)}`,
      value: medianOrNaN(onRates),
      baseline: medianOrNaN(offRates),
      unit: 'req/s',
      target: 'ratio >= 0.9',
      minRatio: 0.9,
      detail: {
        bodyBytes: Buffer.byteLength(body),
        connections: CONNECTIONS,
        measureSec: measureSec(),
        rounds: n,
        ...roundsDetail(paired),
        onRuns: onRates.map(Math.round),
        offRuns: offRates.map(Math.round),
        perRoundRatios: ratios.map((r) => Math.round(r * 100) / 100),
        token:
          "one TokenRequest token of detect-ag-update's OIDC identity, reviewed once per server",
        detectApiCallsWithAuthOff: noApi.api.total(),
      },
    });
    const cpuRow = ratioRow({
      id: 'P3',
      metric: `server CPU per no-op event, sender authentication on vs off (median; per-round ratio ${spread(cpuRatios)})`,
      value: medianOrNaN(onCpu),
      baseline: medianOrNaN(offCpu),
      unit: 'us',
      target: 'report',
      detail: { onRuns: onCpu.map(Math.round), offRuns: offCpu.map(Math.round) },
    });
    return [throughput, cpuRow].map((row) => markNoisy(row, paired));
  } finally {
    await noApi.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export const p3: BenchModule = {
  id: 'P3',
  title: 'no-op event throughput',
  async run(ctx) {
    return [
      ...(await detectRows(ctx)),
      ...(await metricsCostRows(ctx)),
      await surfaceStalledRow(ctx),
      ...(await authRows(ctx)),
    ];
  },
};
