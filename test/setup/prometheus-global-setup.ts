// Vitest globalSetup for the projects whose suites run Prometheus or promtool (unit: the alert
// rules' tests; e2e and reliability: the metrics suites): builds them from the Go module by
// test/prometheus/build.sh (a no-op when up to date; about 10 minutes on a fresh machine), so
// that `npm test` on a fresh clone needs no step of its own. Vitest imports this file once per
// project: the build is shared through globalThis, so it runs once per vitest process.

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './apiserver-process.js';

export const PROMETHEUS_BUILD_SCRIPT = join(REPO_ROOT, 'test', 'prometheus', 'build.sh');

const SHARED = Symbol.for('source-watcher-recovery.prometheus-build');
type Holder = { [SHARED]?: Promise<void> };
const holder = globalThis as Holder;

function build(): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn('bash', [PROMETHEUS_BUILD_SCRIPT], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.once('error', fail);
    child.once('exit', (code) => {
      if (code === 0) done();
      else
        fail(new Error(`Prometheus build failed: bash ${PROMETHEUS_BUILD_SCRIPT} exited ${code}`));
    });
  });
}

export default async function setup(): Promise<void> {
  holder[SHARED] ??= build();
  await holder[SHARED];
}
