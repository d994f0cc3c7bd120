// Makes sure what the benchmarks run is what the source says: rebuilds dist/ with
// `tsc -p tsconfig.build.json` when any source is newer than the built entry points, and compiles
// the echo baseline to plain JavaScript so that both run the same way (`node FILE`).

import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { runNode } from './run-node.js';

export const ENTRY_POINTS = ['detect', 'force-drift', 'surface-stalled'] as const;

export function distEntry(root: string, fn: (typeof ENTRY_POINTS)[number]): string {
  return join(root, 'dist', 'functions', fn, 'main.js');
}

async function mtimeOrZero(path: string): Promise<number> {
  try {
    return (await stat(path)).mtimeMs;
  } catch {
    return 0;
  }
}

async function newestSource(dir: string): Promise<number> {
  let newest = 0;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true, recursive: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    if (!e.isFile() || !e.name.endsWith('.ts')) continue;
    newest = Math.max(newest, await mtimeOrZero(join(e.parentPath, e.name)));
  }
  return newest;
}

/** True when dist/ is missing an entry point or older than a source or tsconfig file. */
export async function distIsStale(root: string): Promise<boolean> {
  const built = await Promise.all(ENTRY_POINTS.map((fn) => mtimeOrZero(distEntry(root, fn))));
  const oldestBuilt = Math.min(...built);
  if (oldestBuilt === 0) return true;
  const newest = Math.max(
    await newestSource(join(root, 'functions')),
    await newestSource(join(root, 'shared')),
    await mtimeOrZero(join(root, 'tsconfig.json')),
    await mtimeOrZero(join(root, 'tsconfig.build.json')),
  );
  return newest > oldestBuilt;
}

/** Runs the project's build. Type errors still emit JavaScript; they are reported, not fatal. */
export async function ensureBuilt(root: string, log: (m: string) => void): Promise<void> {
  if (!(await distIsStale(root))) {
    log('dist/ is up to date');
    return;
  }
  log('dist/ is stale: building (tsc -p tsconfig.build.json)');
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const run = await runNode([tsc, '-p', 'tsconfig.build.json'], root);
  // tsc writes its diagnostics to stdout; both streams, stdout first.
  const output = run.stdout + run.stderr;
  const code = run.code;
  const missing: string[] = [];
  for (const fn of ENTRY_POINTS) {
    if ((await mtimeOrZero(distEntry(root, fn))) === 0) missing.push(fn);
  }
  if (missing.length > 0) {
    throw new Error(`build did not produce ${missing.join(', ')}:\n${output.slice(-4000)}`);
  }
  if (code !== 0) {
    log(`warning: the build reported errors (exit ${code}); benchmarking the emitted JavaScript`);
    log(output.slice(-2000));
  }
}

/**
 * Compiles test/bench/echo-server.ts to an .mjs file under node_modules/.cache (ignored by git,
 * lint and format; module resolution finds the project's node_modules from there).
 */
export async function buildEchoServer(root: string): Promise<string> {
  return compileBenchServer(root, 'echo-server');
}

/** The product's module that P3's baseline imports, as built in dist/. */
const PARSER_SOURCE = '../../shared/runtime/cloudevent-http.js';

/**
 * Compiles test/bench/parse-echo-server.ts like the echo, with its import of detect's parser
 * pointed at dist/ (the same JavaScript detect runs). Call after ensureBuilt.
 */
export async function buildParseEchoServer(root: string): Promise<string> {
  const parser = pathToFileURL(join(root, 'dist', 'shared', 'runtime', 'cloudevent-http.js')).href;
  return compileBenchServer(root, 'parse-echo-server', (js) => {
    if (!js.includes(`'${PARSER_SOURCE}'`)) {
      throw new Error(`parse-echo-server.ts no longer imports ${PARSER_SOURCE}`);
    }
    return js.replace(`'${PARSER_SOURCE}'`, `'${parser}'`);
  });
}

async function compileBenchServer(
  root: string,
  name: string,
  rewrite: (js: string) => string = (js) => js,
): Promise<string> {
  const source = await readFile(join(root, 'test', 'bench', `${name}.ts`), 'utf8');
  const out = ts.transpileModule(source, {
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      verbatimModuleSyntax: true,
    },
    fileName: `${name}.ts`,
  });
  const dir = join(root, 'node_modules', '.cache', 'swr-bench');
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${name}.mjs`);
  await writeFile(file, rewrite(out.outputText));
  return file;
}
