// The test API server for the rows that need one, started once per bench run with the CRDs and
// the RBAC of knative/ installed (the same code the vitest global setup uses).

import { startTestCluster } from '../setup/test-cluster.js';
import type { BenchApiServer } from './types.js';

export interface StartedApiServer extends BenchApiServer {
  stop(): Promise<void>;
}

export async function startBenchApiServer(): Promise<StartedApiServer> {
  const { server, tokens } = await startTestCluster();
  return {
    kubeconfigPath: server.kubeconfigPath,
    serviceAccountTokens: tokens,
    stop: () => server.stop(),
  };
}
