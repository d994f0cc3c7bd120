// Vitest globalSetup for the integration, e2e and reliability projects: one real control plane
// (kube-apiserver with RBAC enforced, kube-controller-manager, embedded etcd) with the upstream
// CRDs installed (generated ones and the verbatim ones of test/third_party/crds/), and the product's ServiceAccounts and RBAC rendered from
// knative/, shared by every project of this vitest process. Tests get the admin kubeconfig
// (`kubeconfigPath`, for fixtures and assertions) and a token per ServiceAccount
// (`serviceAccountTokens`, for the functions under test: test/support/identities.ts).
//
// Vitest 4 runs each project's globalSetup in the same (main) process but imports the file
// once per project, so module state is not shared. The server is therefore kept on globalThis
// with a reference count: the first project starts it, the last teardown stops it.

import type { TestProject } from 'vitest/node';
import type { RunningApiServer } from './apiserver-process.js';
import type { ServiceAccountTokens } from './cluster-rbac.js';
import { startTestCluster } from './test-cluster.js';

declare module 'vitest' {
  interface ProvidedContext {
    kubeconfigPath: string;
    serviceAccountTokens: ServiceAccountTokens;
  }
}

interface ReadyCluster {
  server: RunningApiServer;
  tokens: ServiceAccountTokens;
}

interface SharedServer {
  refs: number;
  ready: Promise<ReadyCluster>;
}

const SHARED = Symbol.for('source-watcher-recovery.test-apiserver');
type Holder = { [SHARED]?: SharedServer };
const holder = globalThis as Holder;

async function startWithCrds(): Promise<ReadyCluster> {
  const cluster = await startTestCluster();
  console.error(
    `test API server ready at ${cluster.server.url} with CRDs and RBAC in ${cluster.startMs} ms (kubeconfig ${cluster.server.kubeconfigPath})`,
  );
  return { server: cluster.server, tokens: cluster.tokens };
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
  let tokens: ServiceAccountTokens;
  try {
    ({ server, tokens } = await current.ready);
  } catch (err) {
    current.refs -= 1;
    if (holder[SHARED] === current) delete holder[SHARED];
    throw err;
  }
  project.provide('kubeconfigPath', server.kubeconfigPath);
  project.provide('serviceAccountTokens', tokens);
  return async () => {
    current.refs -= 1;
    if (current.refs > 0) return;
    if (holder[SHARED] === current) delete holder[SHARED];
    await server.stop();
  };
}
