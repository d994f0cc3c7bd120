// Vitest globalSetup for the unit project's Knative webhook test
// (test/unit/manifests/knative-webhook.test.ts): builds knative-validate, Knative Serving's own
// SetDefaults and Validate, from its Go module by test/knative-validate/build.sh (a no-op when up
// to date; under a minute on 2 cores with Go's caches warm), so that `npm test` on a fresh clone
// needs no step of its own. Vitest imports this file once per project: the build is shared through
// globalThis, so it runs once per process.

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './apiserver-process.js';

export const KNATIVE_VALIDATE_BUILD_SCRIPT = join(
  REPO_ROOT,
  'test',
  'knative-validate',
  'build.sh',
);

const SHARED = Symbol.for('source-watcher-recovery.knative-validate-build');
type Holder = { [SHARED]?: Promise<void> };
const holder = globalThis as Holder;

function build(): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn('bash', [KNATIVE_VALIDATE_BUILD_SCRIPT], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.once('error', fail);
    child.once('exit', (code) => {
      if (code === 0) done();
      else
        fail(
          new Error(
            `knative-validate build failed: bash ${KNATIVE_VALIDATE_BUILD_SCRIPT} exited ${code}`,
          ),
        );
    });
  });
}

export default async function setup(): Promise<void> {
  holder[SHARED] ??= build();
  await holder[SHARED];
}
