// dist/ as the child processes run it: rebuilt (`tsc -p tsconfig.build.json`, what `npm run build`
// runs) when a source under functions/ or shared/ is newer than its compiled output, or a tsconfig
// newer than the oldest output.

import { readdir, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { REPO_ROOT } from '../../setup/apiserver-process.js';
import { runNode } from './run-node.js';

/** The built function's entry point. */
export function builtMain(name: string): string {
  return join(REPO_ROOT, 'dist', 'functions', name, 'main.js');
}

async function mtime(path: string): Promise<number | null> {
  try {
    return (await stat(path)).mtimeMs;
  } catch {
    return null;
  }
}

async function sourcesOf(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => join(e.parentPath, e.name));
}

export async function distIsStale(): Promise<boolean> {
  let oldestBuilt = Infinity;
  for (const source of [
    ...(await sourcesOf(join(REPO_ROOT, 'functions'))),
    ...(await sourcesOf(join(REPO_ROOT, 'shared'))),
  ]) {
    const out = join(REPO_ROOT, 'dist', relative(REPO_ROOT, source)).replace(/\.ts$/, '.js');
    const built = await mtime(out);
    const edited = await mtime(source);
    if (built === null || edited === null || edited > built) return true;
    oldestBuilt = Math.min(oldestBuilt, built);
  }
  for (const config of ['tsconfig.json', 'tsconfig.build.json']) {
    if (((await mtime(join(REPO_ROOT, config))) ?? 0) > oldestBuilt) return true;
  }
  return false;
}

/**
 * Builds dist/ when it is stale. A failed build throws; with `typeErrors: 'warn'` (the benches)
 * type errors are logged and the emitted JavaScript is used, as long as `entryPoints` were built.
 */
export async function ensureBuilt(
  opts: {
    log?: (m: string) => void;
    typeErrors?: 'fail' | 'warn';
    entryPoints?: readonly string[];
  } = {},
): Promise<void> {
  const log = opts.log ?? (() => undefined);
  if (!(await distIsStale())) {
    log('dist/ is up to date');
    return;
  }
  log('dist/ is stale: building (tsc -p tsconfig.build.json)');
  const tsc = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const run = await runNode([tsc, '-p', 'tsconfig.build.json'], REPO_ROOT);
  const output = run.stdout + run.stderr;
  const missing: string[] = [];
  for (const fn of opts.entryPoints ?? []) {
    if ((await mtime(builtMain(fn))) === null) missing.push(fn);
  }
  if (missing.length > 0) {
    throw new Error(`build did not produce ${missing.join(', ')}:\n${output.slice(-4000)}`);
  }
  if (run.code === 0) return;
  if (opts.typeErrors !== 'warn') {
    throw new Error(`the build exited ${run.code}:\n${output.slice(-4000)}`);
  }
  log(`warning: the build reported errors (exit ${run.code}); benchmarking the emitted JavaScript`);
  log(output.slice(-2000));
}
