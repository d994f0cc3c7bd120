// Diagnostics for the cold-start and memory rows: what each runtime dependency costs to import,
// measured in fresh `node` processes (import time and the RSS it adds), median of RUNS. The bench
// run measures it once and shares it (BenchContext.importCosts).

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runNode } from '../harness/functions.js';
import { benchCacheDir } from './build.js';
import { median } from './stats.js';

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
  // Under node_modules so that bare specifiers resolve to the project's packages.
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
