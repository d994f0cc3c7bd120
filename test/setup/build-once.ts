// What the global setups of the Go tools the tests run share (helm-, prometheus- and
// knative-validate-global-setup.ts): run the tool's build script (a no-op when its stamp is up
// to date, test/setup/go-bin.sh), so that `npm test` on a fresh clone needs no step of its own.
// Vitest imports a global setup once per project: the build is shared through globalThis under
// the tool's key, so it runs once per vitest process.

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './apiserver-process.js';

/** test/<folder>/build.sh */
export const buildScript = (folder: string): string => join(REPO_ROOT, 'test', folder, 'build.sh');

function build(script: string, what: string): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn('bash', [script], { stdio: ['ignore', 'inherit', 'inherit'] });
    child.once('error', fail);
    child.once('exit', (code) => {
      if (code === 0) done();
      else fail(new Error(`${what} build failed: bash ${script} exited ${code}`));
    });
  });
}

/** A global setup that builds `what` by `script` once per process. */
export function buildOnce(what: string, script: string): () => Promise<void> {
  const key = Symbol.for(`source-watcher-recovery.build.${script}`);
  const holder = globalThis as { [key: symbol]: Promise<void> | undefined };
  return async () => {
    holder[key] ??= build(script, what);
    await holder[key];
  };
}
