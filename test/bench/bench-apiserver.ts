// The test API server for the rows that need one, started once per bench run with the CRD
// fixtures installed (the same code the vitest global setup uses).

import { KubeConfig } from '@kubernetes/client-node';
import {
  buildApiServer,
  startApiServer,
  type RunningApiServer,
} from '../setup/apiserver-process.js';
import { installCrds, loadCrdFixtures } from '../setup/install-crds.js';
import type { BenchApiServer } from './types.js';

export interface StartedApiServer extends BenchApiServer {
  stop(): Promise<void>;
}

export async function startBenchApiServer(): Promise<StartedApiServer> {
  await buildApiServer();
  const server: RunningApiServer = await startApiServer();
  try {
    const kc = new KubeConfig();
    kc.loadFromFile(server.kubeconfigPath);
    await installCrds(kc, await loadCrdFixtures());
  } catch (e) {
    await server.stop();
    throw e;
  }
  return { url: server.url, kubeconfigPath: server.kubeconfigPath, stop: () => server.stop() };
}
