// Diagnostics for the cold-start and memory rows: what each runtime dependency costs to import,
// measured in fresh `node` processes (import time and the RSS it adds), median of RUNS. The bench
// run measures it once and shares it (BenchContext.importCosts).

import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { runNode } from '../harness/functions.js';
import { benchCacheDir } from './build.js';
import { median } from './stats.js';

const exec = promisify(execFile);

/** The functions' runtime dependencies, in the order a function loads them. */
export const RUNTIME_DEPENDENCIES = ['cloudevents', '@kubernetes/client-node', 'pino', 'express'];
export const RUNS = 3;

const PROBE = `
const out = {};
for (const m of process.argv.slice(2)) {
  const t = performance.now();
  const rss = process.memoryUsage().rss;
  await import(m);
  out[m] = { ms: performance.now() - t, rssMiB: (process.memoryUsage().rss - rss) / 2 ** 20 };
}
process.stdout.write(JSON.stringify(out));
`;

export interface ImportCost {
  /** Milliseconds to import, after the modules before it in the list. */
  readonly ms: number;
  /** RSS the import added, MiB. */
  readonly rssMiB: number;
}

/** The import cost of each of the functions' runtime dependencies. */
export async function measureImportCosts(
  root: string,
  specifiers: readonly string[] = RUNTIME_DEPENDENCIES,
): Promise<Record<string, ImportCost>> {
  // Bare specifiers resolve from there to the project's packages.
  const dir = benchCacheDir(root);
  await mkdir(dir, { recursive: true });
  const probe = join(dir, 'import-probe.mjs');
  await writeFile(probe, PROBE);
  const samples: Record<string, ImportCost>[] = [];
  for (let i = 0; i < RUNS; i++) {
    const { code, stdout, stderr } = await runNode([probe, ...specifiers], root);
    if (code !== 0) throw new Error(`the import probe exited ${code}: ${stderr.slice(-2000)}`);
    samples.push(JSON.parse(stdout) as Record<string, ImportCost>);
  }
  const out: Record<string, ImportCost> = {};
  for (const s of specifiers) {
    out[s] = {
      ms: Math.round(median(samples.map((x) => x[s]?.ms ?? 0))),
      rssMiB: Math.round(median(samples.map((x) => x[s]?.rssMiB ?? 0)) * 10) / 10,
    };
  }
  return out;
}

const BUNDLE_PROBE = `
const [eager, late] = JSON.parse(process.argv[2]);
for (const m of eager) await import(m);
const t = performance.now();
const rss = process.memoryUsage().rss;
for (const m of late) await import(m);
process.stdout.write(JSON.stringify({ ms: performance.now() - t, rssMiB: (process.memoryUsage().rss - rss) / 2 ** 20 }));
`;

interface Metafile {
  outputs: Record<
    string,
    { entryPoint?: string; imports: { path: string; kind: string; external?: boolean }[] }
  >;
}

/** `file` and every output it imports statically, recursively (paths as the metafile has them). */
function staticClosure(meta: Metafile, file: string, into = new Set<string>()): Set<string> {
  if (into.has(file)) return into;
  into.add(file);
  for (const i of meta.outputs[file]?.imports ?? []) {
    if (i.kind === 'import-statement' && i.external !== true) staticClosure(meta, i.path, into);
  }
  return into;
}

/**
 * What the bundled `fn` pays on its first API call, when it imports the Kubernetes client
 * (shared/kube/client.ts and config.ts, with @kubernetes/client-node as far as they use it): the
 * chunks it had not loaded at start, imported in a fresh `node` after the ones it had. Reads the
 * bundler's metafile (dist/bundle-meta.json); `env` is the bundles' (the compile cache, as the
 * image has it). Median of RUNS.
 */
export async function measureBundledClientImport(
  root: string,
  env: Readonly<Record<string, string>>,
  fn = 'detect',
): Promise<ImportCost> {
  const meta = JSON.parse(
    await readFile(join(root, 'dist', 'bundle-meta.json'), 'utf8'),
  ) as Metafile;
  const main = `dist/bundle/functions/${fn}/main.js`;
  if (meta.outputs[main] === undefined) throw new Error(`the bundle has no ${main}`);
  const eager = staticClosure(meta, main);
  eager.delete(main);
  const late = new Set<string>();
  for (const [file, out] of Object.entries(meta.outputs)) {
    if (out.entryPoint === 'shared/kube/client.ts' || out.entryPoint === 'shared/kube/config.ts') {
      for (const f of staticClosure(meta, file)) if (!eager.has(f) && f !== main) late.add(f);
    }
  }
  if (late.size === 0) throw new Error('the bundle has no lazily loaded Kubernetes client chunk');
  const url = (f: string): string => pathToFileURL(join(root, f)).href;
  const dir = benchCacheDir(root);
  await mkdir(dir, { recursive: true });
  const probe = join(dir, 'bundle-import-probe.mjs');
  await writeFile(probe, BUNDLE_PROBE);
  const arg = JSON.stringify([[...eager].map(url), [...late].map(url)]);
  const samples: ImportCost[] = [];
  for (let i = 0; i < RUNS; i++) {
    const { stdout } = await exec(process.execPath, [probe, arg], {
      cwd: root,
      env: { PATH: process.env['PATH'] ?? '', ...env },
    });
    samples.push(JSON.parse(stdout) as ImportCost);
  }
  return {
    ms: Math.round(median(samples.map((s) => s.ms))),
    rssMiB: Math.round(median(samples.map((s) => s.rssMiB)) * 10) / 10,
  };
}
