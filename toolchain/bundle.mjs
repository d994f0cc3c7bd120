// Bundles the five functions with esbuild (docs/adr/0058-bundles-and-a-small-image.md): one ESM
// entry per function at dist/bundle/functions/NAME/main.js, with the code shared between them and
// the lazily imported Kubernetes client in chunks (dist/bundle/chunks/), so that what a function
// does not call is not in its files and what it calls late (client-node, on the first API call) is
// read late. The image carries dist/bundle/ as /app/dist/, so the Knative Services' commands
// (`node dist/functions/NAME/main.js`) run the bundles.
//
//   node toolchain/bundle.mjs [--outdir DIR] [--metafile FILE]   # FILE defaults to DIR-meta.json
//   node toolchain/bundle.mjs --entry FILE.ts --outdir DIR           # another entry, same options
//
// --entry bundles one other program with exactly the functions' options (the bench's baselines:
// they run as the functions run, test/bench/build.ts); its output is DIR/PATH/NAME.js.
//
// Prints one line per output file with its size. Exit code 1 when esbuild reports an error.

import { build } from 'esbuild';
import console from 'node:console';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Every function (functions/NAME/main.ts): knative/ has one Service each, the image runs them all. */
export const FUNCTIONS = readdirSync(join(ROOT, 'functions'), { withFileTypes: true })
  .filter((e) => e.isDirectory() && existsSync(join(ROOT, 'functions', e.name, 'main.ts')))
  .map((e) => e.name)
  .sort();

// express, pino and their dependencies are CommonJS and call require() on Node's built-ins; an
// ESM bundle has no require, so give it Node's.
const BANNER =
  "import { createRequire as __swrCreateRequire } from 'node:module';\n" +
  'const require = __swrCreateRequire(import.meta.url);';

/** esbuild options shared by the functions' bundles and the bench's import probe. */
export function bundleOptions(outdir) {
  return {
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    splitting: true,
    outbase: ROOT,
    outdir,
    entryNames: '[dir]/[name]',
    chunkNames: 'chunks/[name]-[hash]',
    banner: { js: BANNER },
    // Whitespace and syntax only: stack traces keep the sources' names.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'none',
    logLevel: 'warning',
    metafile: true,
    define: { 'process.env.NODE_ENV': '"production"' },
    plugins: [clientNodeWithoutSideEffects],
  };
}

// The project uses client-node's KubeConfig only (shared/kube/config.ts: credentials and
// kubeconfig loading; shared/kube/transport.ts makes its own requests). Its index re-exports the
// whole client (generated APIs, watch, exec, metrics, OIDC, Azure and GCP auth), and its
// package.json does not say that its modules have no side effects, so esbuild keeps every one of
// them. They have none at import time (classes and functions only), so esbuild may drop each
// module nothing uses.
const clientNodeWithoutSideEffects = {
  name: 'client-node-without-side-effects',
  setup(b) {
    const index = createRequire(join(ROOT, 'package.json')).resolve('@kubernetes/client-node');
    const dist = dirname(index) + sep;
    b.onResolve({ filter: /^@kubernetes\/client-node$/ }, () => ({
      path: index,
      sideEffects: false,
    }));
    // Its modules import each other by relative paths with the .js extension.
    b.onResolve({ filter: /^\.\.?\/.*\.js$/ }, (args) => {
      const path = resolve(args.resolveDir, args.path);
      return args.importer.startsWith(dist) && path.startsWith(dist)
        ? { path, sideEffects: false }
        : undefined;
    });
  },
};

export async function bundle({
  outdir = join(ROOT, 'dist', 'bundle'),
  metafile,
  entryPoints = FUNCTIONS.map((f) => join(ROOT, 'functions', f, 'main.ts')),
} = {}) {
  await rm(outdir, { recursive: true, force: true });
  await mkdir(outdir, { recursive: true });
  const result = await build({ ...bundleOptions(outdir), entryPoints });
  // Node reads a .js file under a package.json without "type" as CommonJS.
  await writeFile(join(outdir, 'package.json'), '{ "type": "module" }\n');
  // Beside the bundles, not in them (the image copies dist/bundle/ only): the bench reads which
  // chunks a function loads at start and which on its first API call.
  await writeFile(metafile ?? `${outdir}-meta.json`, JSON.stringify(result.metafile));
  return { outdir, outputs: result.metafile.outputs };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const opt = (name) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const outdirArg = opt('--outdir');
  const entry = opt('--entry');
  if (entry !== undefined && outdirArg === undefined) {
    console.error('bundle: --entry needs --outdir (dist/bundle holds the functions)');
    process.exit(2);
  }
  const started = performance.now();
  const { outdir, outputs } = await bundle({
    ...(outdirArg !== undefined ? { outdir: resolve(outdirArg) } : {}),
    ...(entry !== undefined ? { entryPoints: [resolve(entry)] } : {}),
    metafile: opt('--metafile'),
  });
  let total = 0;
  for (const [file, out] of Object.entries(outputs)) {
    total += out.bytes;
    console.log(
      `bundle: ${relative(outdir, resolve(ROOT, file))} ${(out.bytes / 1024).toFixed(1)} KiB`,
    );
  }
  console.log(
    `bundle: ${Object.keys(outputs).length} files, ${(total / 1048576).toFixed(2)} MiB in ${relative(ROOT, outdir)}/ (${Math.round(performance.now() - started)} ms)`,
  );
}
