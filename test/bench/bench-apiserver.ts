// The test API server for the rows that need one, started once per bench run with the CRDs and
// the RBAC of knative/ installed (the same code the vitest global setup uses).

import type { ServiceAccountTokens } from '../setup/cluster-rbac.js';
import { startTestCluster } from '../setup/test-cluster.js';
import type { BenchApiServer } from './types.js';

export interface StartedApiServer extends BenchApiServer {
  readonly serviceAccountTokens: ServiceAccountTokens;
  stop(): Promise<void>;
}

export async function startBenchApiServer(): Promise<StartedApiServer> {
  const { server, tokens } = await startTestCluster();
  return {
    url: server.url,
    kubeconfigPath: server.kubeconfigPath,
    serviceAccountTokens: tokens,
    stop: () => server.stop(),
  };
}
