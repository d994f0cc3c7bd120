// The Prometheus room (docs/adr/0059-otlp-metrics.md): a real Prometheus, built from the Go module
// github.com/prometheus/prometheus by test/prometheus/build.sh, on 127.0.0.1 with its OTLP
// receiver on and a fresh TSDB in a temporary directory. The one door: startPrometheus(). The
// functions push to `otlpMetricsUrl` (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT); a suite reads the
// result back in PromQL with query().

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../../..');
export const PROMETHEUS_BIN = join(ROOT, 'test/prometheus/.cache/bin/prometheus');
export const PROMTOOL_BIN = join(ROOT, 'test/prometheus/.cache/bin/promtool');

/** The binary, or a clear error naming the build step. */
export function prometheusBinary(bin: string = PROMETHEUS_BIN): string {
  if (!existsSync(bin)) {
    throw new Error(
      `${bin} is not built: run bash test/prometheus/build.sh (about 10 minutes the first time)`,
    );
  }
  return bin;
}

/** One series of an instant vector: its labels and value. */
export interface Sample {
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface PrometheusRoom {
  /** http://127.0.0.1:PORT */
  readonly url: string;
  /** Where functions push: OTEL_EXPORTER_OTLP_METRICS_ENDPOINT. */
  readonly otlpMetricsUrl: string;
  /** An instant query, evaluated now. */
  query(promql: string): Promise<Sample[]>;
  /** The one value of `promql` (a sum), 0 when it has no series. */
  scalar(promql: string): Promise<number>;
  stop(): Promise<void>;
}

/** The room's configuration: nothing scraped, OTLP in; the resource's service.name becomes job. */
const CONFIG = `global:
  evaluation_interval: 1m
otlp:
  promote_resource_attributes: [service.namespace]
`;

export async function startPrometheus(): Promise<PrometheusRoom> {
  const bin = prometheusBinary();
  const dir = await mkdtemp(join(tmpdir(), 'swr-prometheus-'));
  await writeFile(join(dir, 'prometheus.yml'), CONFIG);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let output = '';
  const child: ChildProcess = spawn(
    bin,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--web.enable-otlp-receiver',
      '--log.level=warn',
    ],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const keep = (b: Buffer): void => {
    output = (output + b.toString()).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitReady(url, child, () => output);
  } catch (e) {
    await stop();
    throw e;
  }
  const query = async (promql: string): Promise<Sample[]> => {
    const res = await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: promql })}`);
    const body = (await res.json()) as {
      status: string;
      error?: string;
      data?: {
        resultType: string;
        result: { metric: Record<string, string>; value: [number, string] }[];
      };
    };
    if (body.status !== 'success' || body.data === undefined) {
      throw new Error(`PromQL ${promql}: ${body.error ?? res.status}`);
    }
    if (body.data.resultType !== 'vector') throw new Error(`PromQL ${promql}: not a vector`);
    return body.data.result.map((r) => ({ labels: r.metric, value: Number(r.value[1]) }));
  };
  return {
    url,
    otlpMetricsUrl: `${url}/api/v1/otlp/v1/metrics`,
    query,
    scalar: async (promql) => (await query(promql)).reduce((n, s) => n + s.value, 0),
    stop,
  };
}

async function waitReady(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`prometheus exited (${child.exitCode}):\n${output()}`);
    try {
      const res = await fetch(`${url}/-/ready`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`prometheus not ready within 60 s:\n${output()}`);
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => done(port));
    });
  });
}
