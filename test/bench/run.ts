// `npm run bench [-- --only P3,P4] [-- --json FILE] [-- --markdown FILE]`
//
// Runs each benchmark module, collects its rows and prints the table (metric, value, baseline,
// ratio, target, pass). Baselines are measured in the same run. A missed target is reported as
// pass=NO and does NOT change the exit code; the exit code is non-zero only when a benchmark
// could not run (an error) or the arguments are bad. See docs/benchmarks.md.

import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { startBenchApiServer, type StartedApiServer } from './bench-apiserver.js';
import {
  buildBundles,
  buildEchoServer,
  buildParseEchoServer,
  bundledMain,
  ENTRY_POINTS,
  warmCompileCache,
} from './build.js';
import { measureImportCosts, type ImportCost } from './import-cost.js';
import { p1, p2 } from './p1-p2-e2e.js';
import { p3 } from './p3-throughput.js';
import { p4 } from './p4-cold-start.js';
import { p5 } from './p5-api-cost.js';
import { p6 } from './p6-sweep.js';
import { p7 } from './p7-memory.js';
import { p8 } from './p8-early-detection.js';
import { p9 } from './p9-storm.js';
import { image } from './image-size.js';
import { ensureBuilt, killAllServers } from '../harness/functions.js';
import { SMOKE_ENV } from './smoke.js';
import { loadSummary } from './stats.js';
import { renderMarkdown, renderTable } from './table.js';
import type { BenchContext, BenchModule, BenchRow, BenchScripts } from './types.js';
import { unmeasuredRow } from './types.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** In issue order. */
export const MODULES: readonly BenchModule[] = [p1, p2, p3, p4, p5, p6, p7, p8, p9, image];

interface Args {
  only: Set<string> | undefined;
  smoke: boolean;
  json: string | undefined;
  markdown: string | undefined;
}

const USAGE =
  'usage: npm run bench [-- --only P3,P4] [--smoke] [--json FILE] [--markdown FILE]\n' +
  `  --only      run only these metrics (${MODULES.map((m) => m.id).join(', ')})\n` +
  '  --smoke     every row at small sizes, in about 2-3 minutes (CI): checks that each bench\n' +
  '              still runs; its numbers are not results\n' +
  '  --json      also write the rows and the machine description as JSON to FILE\n' +
  '  --markdown  also write the table as Markdown to FILE\n' +
  'Exit code: 0 when every benchmark ran (missed targets included), 1 on errors, 2 on bad arguments.';

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { only: undefined, smoke: false, json: undefined, markdown: undefined };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new Error(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '--only': {
        const ids = value()
          .split(',')
          .map((s) => s.trim().toUpperCase())
          .filter((s) => s !== '');
        const unknown = ids.filter((id) => !MODULES.some((m) => m.id === id));
        if (ids.length === 0 || unknown.length > 0) {
          throw new Error(`--only: unknown metric ${unknown.join(', ') || '(none given)'}`);
        }
        args.only = new Set(ids);
        break;
      }
      case '--smoke':
        args.smoke = true;
        break;
      case '--json':
        args.json = value();
        break;
      case '--markdown':
        args.markdown = value();
        break;
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        process.exit(0);
        break;
      default:
        throw new Error(`unknown argument ${String(flag)}`);
    }
  }
  return args;
}

function machine(): Record<string, unknown> {
  const cpu = cpus();
  return {
    cpuModel: cpu[0]?.model ?? 'unknown',
    cpus: cpu.length,
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    os: `${platform()} ${release()}`,
    node: process.version,
  };
}

/** The commit benchmarked, and whether the product sources differ from it (read-only git). */
function revision(): { commit: string; productSourcesModified: boolean } | undefined {
  try {
    const git = (...args: string[]): string =>
      execFileSync('git', args, {
        cwd: ROOT,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      });
    const commit = git('rev-parse', '--short', 'HEAD').trim();
    const changed = git('status', '--porcelain', '--', 'functions', 'shared').trim();
    return { commit, productSourcesModified: changed !== '' };
  } catch {
    return undefined;
  }
}

function errorRow(module: BenchModule, e: unknown): BenchRow {
  const message = e instanceof Error ? e.message : String(e);
  const note = `error: ${message.split('\n')[0]?.slice(0, 120) ?? ''}`;
  return {
    ...unmeasuredRow(module.id, `${module.title}: ERROR`, '-', note),
    detail: { error: message.slice(0, 4000) },
  };
}

async function main(): Promise<number> {
  let args: Args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`bench: ${(e as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const log = (m: string): void => {
    process.stderr.write(`${m}\n`);
  };
  if (args.smoke) {
    process.env[SMOKE_ENV] = '1';
    log('smoke run: small sizes; the numbers below are not results');
  }

  let scripts: Promise<BenchScripts> | undefined;
  let apiServer: Promise<StartedApiServer> | undefined;
  let importCosts: Promise<Record<string, ImportCost>> | undefined;
  const ctx: BenchContext = {
    root: ROOT,
    log,
    scripts() {
      scripts ??= (async () => {
        await ensureBuilt({ log, typeErrors: 'warn', entryPoints: ENTRY_POINTS });
        // The functions run as the image runs them: bundled (docs/adr/0058).
        log(await buildBundles(ROOT));
        return {
          detectEnv: await warmCompileCache(ROOT),
          detect: bundledMain(ROOT, 'detect'),
          surfaceStalled: bundledMain(ROOT, 'surface-stalled'),
          echo: await buildEchoServer(ROOT),
          parseEcho: await buildParseEchoServer(ROOT),
        };
      })();
      return scripts;
    },
    apiServer() {
      if (apiServer === undefined) {
        log('starting the test API server');
        apiServer = startBenchApiServer();
      }
      return apiServer;
    },
    importCosts() {
      importCosts ??= measureImportCosts(ROOT);
      return importCosts;
    },
  };

  const startedAt = new Date();
  const source = revision();
  if (source !== undefined) {
    log(
      `benchmarking ${source.commit}${source.productSourcesModified ? ' with uncommitted changes in functions/ or shared/' : ''}`,
    );
  }
  const load = [loadavg()[0] ?? 0];
  const rows: BenchRow[] = [];
  const timings: Record<string, number> = {};
  // The machine's load while each module ran: 1-minute load average at its start and end.
  const moduleLoad: Record<string, [number, number]> = {};
  const loadSamples: number[] = [];
  const sampler = setInterval(() => loadSamples.push(loadavg()[0] ?? 0), 10_000);
  sampler.unref();
  let errors = 0;
  const selected = MODULES.filter((m) => args.only === undefined || args.only.has(m.id));
  try {
    for (const module of selected) {
      log(`${module.id} ${module.title}`);
      const t0 = performance.now();
      const loadAtStart = loadavg()[0] ?? 0;
      try {
        rows.push(...(await module.run(ctx)));
      } catch (e) {
        errors++;
        log(`  error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
        rows.push(errorRow(module, e));
      }
      timings[module.id] = Math.round((performance.now() - t0) / 100) / 10;
      moduleLoad[module.id] = [loadAtStart, loadavg()[0] ?? 0];
      log(
        `  (${timings[module.id]} s, load ${loadAtStart.toFixed(2)} -> ${(loadavg()[0] ?? 0).toFixed(2)})`,
      );
    }
  } finally {
    clearInterval(sampler);
    killAllServers();
    if (apiServer !== undefined) {
      await apiServer.then(
        (s) => s.stop(),
        () => undefined,
      );
    }
  }
  load.push(loadavg()[0] ?? 0);

  const totalSec = Math.round((Date.now() - startedAt.getTime()) / 100) / 10;
  process.stdout.write(`\n${renderTable(rows)}\n\n`);
  const passed = rows.filter((r) => r.pass === true).length;
  const failed = rows.filter((r) => r.pass === false).length;
  process.stdout.write(
    `${passed} passed, ${failed} not passed, ${rows.length - passed - failed} informational; ` +
      `${errors} error(s); ${totalSec} s\n`,
  );
  const samples = loadSamples.length > 0 ? loadSamples : load;
  const machineLoad = { ...loadSummary(samples), samples: samples.length };
  process.stdout.write(
    `machine load (1-minute average, sampled every 10 s): min ${machineLoad.min.toFixed(2)}, ` +
      `mean ${machineLoad.mean.toFixed(2)}, max ${machineLoad.max.toFixed(2)} on ${cpus().length} CPUs\n`,
  );

  const report = {
    date: startedAt.toISOString(),
    smoke: args.smoke,
    machine: { ...machine(), loadAverage1mAtStartAndEnd: load, loadAverage1m: machineLoad },
    // The rows after a rebuild of dist/ measure the sources as they were at that moment.
    source: { atStart: source, atEnd: revision() },
    durationSec: totalSec,
    moduleSeconds: timings,
    moduleLoadAverage1m: moduleLoad,
    rows,
  };
  if (args.json !== undefined) {
    await writeFile(resolve(args.json), `${JSON.stringify(report, null, 2)}\n`);
    log(`wrote ${args.json}`);
  }
  if (args.markdown !== undefined) {
    await writeFile(resolve(args.markdown), `${renderMarkdown(rows)}\n`);
    log(`wrote ${args.markdown}`);
  }
  return errors > 0 ? 1 : 0;
}

process.once('SIGINT', () => {
  killAllServers();
  process.exit(130);
});

const code = await main();
// Keep-alive sockets of in-process clients must not hold the run open.
process.exit(code);
