// The baselines the benchmarks run next to the functions: the echo servers compiled to plain
// JavaScript so that both run the same way (`node FILE`). dist/ itself is built by the functions
// room (test/harness/functions/build.ts).

import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';

const exec = promisify(execFile);
import { runNode } from '../harness/functions.js';

/** The functions the benches run from dist/. */
export const ENTRY_POINTS = ['detect', 'force-drift', 'surface-stalled'] as const;

/** Where `npm run build` writes the functions' bundles (toolchain/bundle.mjs): what the image runs. */
export function bundleDir(root: string): string {
  return join(root, 'dist', 'bundle');
}

/** A function's bundled entry point, as the image has it at /app/dist/functions/NAME/main.js. */
export function bundledMain(root: string, name: string): string {
  return join(bundleDir(root), 'functions', name, 'main.js');
}

/**
 * Bundles the functions as `npm run build` does (toolchain/bundle.mjs, esbuild; about a second),
 * so that the benches run what the image runs. Returns the bundler's summary line.
 */
export async function buildBundles(root: string): Promise<string> {
  const run = await runNode([join(root, 'toolchain', 'bundle.mjs')], root);
  if (run.code !== 0) {
    throw new Error(
      `toolchain/bundle.mjs exited ${run.code}:\n${(run.stdout + run.stderr).slice(-4000)}`,
    );
  }
  return run.stdout.trim().split('\n').at(-1) ?? '';
}

/**
 * Node's module compile cache for the bundles, made as .ci/image/build.sh makes the image's (each
 * function started with a config it refuses, so that it exits once its code is loaded; then every
 * chunk imported): the benches run detect with it, as the image does (NODE_COMPILE_CACHE).
 * Returns the environment that points node at it.
 */
export async function warmCompileCache(root: string): Promise<Record<string, string>> {
  const dir = join(benchCacheDir(root), 'node-compile-cache');
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const env = { PATH: process.env['PATH'] ?? '', NODE_COMPILE_CACHE: dir };
  const bundles = bundleDir(root);
  for (const fn of await readdir(join(bundles, 'functions'))) {
    await exec(process.execPath, [join(bundles, 'functions', fn, 'main.js')], {
      env: { ...env, PORT: 'not-a-port' },
    }).catch(() => undefined);
  }
  const chunks = (await readdir(join(bundles, 'chunks'))).map(
    (f) => pathToFileURL(join(bundles, 'chunks', f)).href,
  );
  await exec(
    process.execPath,
    ['--input-type=module', '-e', `for (const c of ${JSON.stringify(chunks)}) await import(c);`],
    { env },
  );
  if ((await readdir(dir, { recursive: true })).length < 2) {
    throw new Error(`the compile cache in ${dir} came out empty`);
  }
  return { NODE_COMPILE_CACHE: dir };
}

/**
 * Compiles test/bench/echo-server.ts to an .mjs file in benchCacheDir (module resolution finds
 * the project's node_modules from there).
 */
export async function buildEchoServer(root: string): Promise<string> {
  return compileBenchServer(root, 'echo-server');
}

/**
 * Bundles test/bench/parse-echo-server.ts (P3's baseline) as `npm run build` bundles detect:
 * toolchain/bundle.mjs with the functions' esbuild options, so that its express, its body parser
 * and detect's parser (shared/runtime/cloudevent-http.ts, from the same sources) are built and run
 * exactly as detect's are (`node FILE`, production defines, the same target). Returns the file.
 */
export async function buildParseEchoServer(root: string): Promise<string> {
  const outdir = join(benchCacheDir(root), 'parse-echo');
  const run = await runNode(
    [
      join(root, 'toolchain', 'bundle.mjs'),
      '--entry',
      join(root, 'test', 'bench', 'parse-echo-server.ts'),
      '--outdir',
      outdir,
    ],
    root,
  );
  if (run.code !== 0) {
    throw new Error(
      `bundling parse-echo-server.ts exited ${run.code}:\n${(run.stdout + run.stderr).slice(-4000)}`,
    );
  }
  return join(outdir, 'test', 'bench', 'parse-echo-server.js');
}

/** `js` (compiled from `name`.ts) with its import of `from` pointed at `to`; it must have one. */
function repointImport(js: string, name: string, from: string, to: string): string {
  if (!js.includes(`'${from}'`)) throw new Error(`${name}.ts no longer imports ${from}`);
  return js.replace(`'${from}'`, `'${to}'`);
}

/** The module both echoes import, compiled next to them. */
const SHARED_SOURCE = './echo-http.js';

async function compileBenchServer(
  root: string,
  name: string,
  rewrite: (js: string) => string = (js) => js,
): Promise<string> {
  await compileBenchModule(root, 'echo-http');
  return compileBenchModule(root, name, (js) =>
    rewrite(repointImport(js, name, SHARED_SOURCE, './echo-http.mjs')),
  );
}

/**
 * Where the bench writes the scripts it runs with `node`: the checkout's own .cache (ignored by
 * git, lint and format), never under node_modules, which worktrees may share (a symlink), so that
 * two checkouts' benches never run each other's baselines. Bare specifiers resolve from there to
 * the checkout's node_modules.
 */
export function benchCacheDir(root: string): string {
  return join(root, '.cache', 'swr-bench');
}

async function compileBenchModule(
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
  const dir = benchCacheDir(root);
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${name}.mjs`);
  await writeFile(file, rewrite(out.outputText));
  return file;
}
