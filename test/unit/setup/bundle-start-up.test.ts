// What each function's bundle loads at start (docs/adr/0058): @kubernetes/client-node, the
// kubeconfig reader that is most of a function's start-up cost, is read only at the first API
// request (shared/kube/transport.ts loads the kubeconfig then). A static import of
// shared/kube/config.ts anywhere on the start-up path would put it back into every cold start
// (bench P4, P7) without failing anything else; this holds the bundles to it.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: the bundler script is plain JavaScript, without declarations.
import { bundle, FUNCTIONS } from '../../../toolchain/bundle.mjs';

interface Output {
  imports: { path: string; kind: string; external?: boolean }[];
  inputs: Record<string, unknown>;
}

let dir = '';
let outputs: Record<string, Output> = {};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'swr-bundle-'));
  const built = (await bundle({
    outdir: join(dir, 'bundle'),
    metafile: join(dir, 'meta.json'),
  })) as {
    outputs: Record<string, Output>;
  };
  outputs = built.outputs;
}, 120_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

/** The output files `file` loads before its first line runs (static imports, recursively). */
function startUp(file: string, into = new Set<string>()): Set<string> {
  if (into.has(file)) return into;
  into.add(file);
  for (const i of outputs[file]?.imports ?? []) {
    if (i.kind === 'import-statement' && i.external !== true) startUp(i.path, into);
  }
  return into;
}

function inputsOf(files: Iterable<string>): string[] {
  return [...files].flatMap((f) => Object.keys(outputs[f]?.inputs ?? {}));
}

describe('the bundles load client-node at the first API request, not at start', () => {
  it('bundles every function', () => {
    expect(FUNCTIONS as string[]).toEqual(
      expect.arrayContaining(['detect', 'force-drift', 'surface-stalled', 'dead-letter']),
    );
  });

  it.each(FUNCTIONS as string[])('%s', (fn) => {
    const main = Object.keys(outputs).find((f) => f.endsWith(`functions/${fn}/main.js`));
    expect(main, `no bundle for ${fn}`).toBeDefined();
    const eager = inputsOf(startUp(main as string));
    expect(eager.length).toBeGreaterThan(10);
    expect(eager.filter((i) => i.includes('@kubernetes/client-node'))).toEqual([]);
    expect(eager).not.toContain('shared/kube/config.ts');
    // ...and it is still in the bundle, for the first request.
    const all = inputsOf(Object.keys(outputs));
    if (fn !== 'dead-letter') expect(all).toContain('shared/kube/config.ts');
  });
});
