// Vitest globalSetup for the integration and e2e projects: one real API server with the CRD
// fixtures installed, shared by every project of this vitest process.
//
// Vitest 4 runs each project's globalSetup in the same (main) process but imports the file
// once per project, so module state is not shared. The server is therefore kept on globalThis
// with a reference count: the first project starts it, the last teardown stops it.

import * as k8s from '@kubernetes/client-node';
import type { TestProject } from 'vitest/node';
import { buildApiServer, startApiServer } from './apiserver-process.js';
import type { RunningApiServer } from './apiserver-process.js';
import { installCrds, loadCrdFixtures } from './install-crds.js';

declare module 'vitest' {
  interface ProvidedContext {
    kubeconfigPath: string;
  }
}

interface SharedServer {
  refs: number;
  ready: Promise<RunningApiServer>;
}

const SHARED = Symbol.for('source-watcher-recovery.test-apiserver');
type Holder = { [SHARED]?: SharedServer };
const holder = globalThis as Holder;

async function startWithCrds(): Promise<RunningApiServer> {
  await buildApiServer();
  const started = Date.now();
  const server = await startApiServer();
  try {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(server.kubeconfigPath);
    await installCrds(kc, await loadCrdFixtures());
    console.error(
      `test API server ready at ${server.url} with CRDs in ${Date.now() - started} ms (kubeconfig ${server.kubeconfigPath})`,
    );
    return server;
  } catch (err) {
    await server.stop();
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(
      `installing CRDs on the test API server failed: ${reason}\n--- server stderr (tail) ---\n${server.stderrTail()}`,
    );
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let shared = holder[SHARED];
  if (shared === undefined) {
    shared = { refs: 0, ready: startWithCrds() };
    holder[SHARED] = shared;
  }
  const current = shared;
  current.refs += 1;
  let server: RunningApiServer;
  try {
    server = await current.ready;
  } catch (err) {
    current.refs -= 1;
    if (holder[SHARED] === current) delete holder[SHARED];
    throw err;
  }
  project.provide('kubeconfigPath', server.kubeconfigPath);
  return async () => {
    current.refs -= 1;
    if (current.refs > 0) return;
    if (holder[SHARED] === current) delete holder[SHARED];
    await server.stop();
  };
}
