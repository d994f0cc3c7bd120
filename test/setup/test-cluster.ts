// The test cluster, ready for the product: build (cached) and start the control plane
// (test/apiserver), install the upstream CRDs (generated, and the verbatim ones the repository carries in
// test/third_party/crds/), and the identities rendered from knative/ with a token per ServiceAccount,
// and its ValidatingAdmissionPolicies, in force. Used by the vitest global setup, `npm start` and the
// benchmarks, so all three run the same cluster with RBAC enforced.

import * as k8s from '@kubernetes/client-node';
import { buildApiServer, startApiServer, type RunningApiServer } from './apiserver-process.js';
import { installAdmissionPolicies } from './admission-policy.js';
import { installIdentities, type ServiceAccountTokens } from './cluster-rbac.js';
import { installCrds, loadAllCrds, prepareUpstreamCrds } from './install-crds.js';

export interface TestCluster {
  readonly server: RunningApiServer;
  /** The admin (system:masters) kubeconfig, loaded. */
  readonly kubeConfig: k8s.KubeConfig;
  readonly tokens: ServiceAccountTokens;
  /** Milliseconds from spawning the control plane to CRDs and RBAC installed. */
  readonly startMs: number;
}

export async function startTestCluster(): Promise<TestCluster> {
  await buildApiServer();
  await prepareUpstreamCrds();
  const started = Date.now();
  const server = await startApiServer();
  try {
    const kubeConfig = new k8s.KubeConfig();
    kubeConfig.loadFromFile(server.kubeconfigPath);
    await installCrds(kubeConfig, await loadAllCrds());
    const tokens = await installIdentities(kubeConfig);
    // The admission policies (docs/adr/0055), in force before any suite writes.
    await installAdmissionPolicies(kubeConfig);
    return { server, kubeConfig, tokens, startMs: Date.now() - started };
  } catch (err) {
    await server.stop();
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(
      `preparing the test cluster (CRDs, RBAC) failed: ${reason}\n--- server stderr (tail) ---\n${server.stderrTail()}`,
      { cause: err },
    );
  }
}
