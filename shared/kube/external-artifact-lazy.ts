// An ExternalArtifactPort that builds the real one on first use, like lazy.ts for KubePort.

import type { ExternalArtifactPort } from './external-artifact-port.js';

/** The port built on first use (client-node loads only when the function first calls the API). */
export function lazyExternalArtifactPort(
  load: () => Promise<ExternalArtifactPort>,
): ExternalArtifactPort {
  let loading: Promise<ExternalArtifactPort> | undefined;
  const port = (): Promise<ExternalArtifactPort> => {
    loading ??= load().catch((e: unknown) => {
      loading = undefined;
      throw e;
    });
    return loading;
  };
  return {
    listExternalArtifacts: async (...a) => (await port()).listExternalArtifacts(...a),
    deleteExternalArtifact: async (...a) => (await port()).deleteExternalArtifact(...a),
    mayApplyExternalArtifacts: async (...a) => (await port()).mayApplyExternalArtifacts(...a),
  };
}
