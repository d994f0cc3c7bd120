// Vitest globalSetup for the unit project (the chart tests run a real Helm): builds it from the
// Go module by test/helm/build.sh (a no-op when up to date; about 2-3 minutes on 2 cores on a
// fresh machine), so that `npm test` on a fresh clone needs no step of its own. Vitest imports this
// file once per project: the build is shared through globalThis, so it runs once per process.

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './apiserver-process.js';

export const HELM_BUILD_SCRIPT = join(REPO_ROOT, 'test', 'helm', 'build.sh');

const SHARED = Symbol.for('source-watcher-recovery.helm-build');
type Holder = { [SHARED]?: Promise<void> };
const holder = globalThis as Holder;

function build(): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn('bash', [HELM_BUILD_SCRIPT], { stdio: ['ignore', 'inherit', 'inherit'] });
    child.once('error', fail);
    child.once('exit', (code) => {
      if (code === 0) done();
      else fail(new Error(`Helm build failed: bash ${HELM_BUILD_SCRIPT} exited ${code}`));
    });
  });
}

export default async function setup(): Promise<void> {
  holder[SHARED] ??= build();
  await holder[SHARED];
}
