// A KubePort that builds the real one on first use. Loading @kubernetes/client-node (for the
// kubeconfig and its TLS options) costs most of a function's start-up time and memory; detect's
// no-op path never talks to the API server, so it never pays for it.

import type { KubePort } from './port.js';

export function lazyKubePort(load: () => Promise<KubePort>): KubePort {
  let loading: Promise<KubePort> | undefined;
  const port = (): Promise<KubePort> => {
    loading ??= load().catch((e: unknown) => {
      loading = undefined; // try again on the next call
      throw e;
    });
    return loading;
  };
  return {
    getArtifactGenerator: async (...a) => (await port()).getArtifactGenerator(...a),
    listArtifactGenerators: async (...a) => (await port()).listArtifactGenerators(...a),
    getArtifactGeneratorBefore: async (...a) => (await port()).getArtifactGeneratorBefore(...a),
    getPackageSource: async (...a) => (await port()).getPackageSource(...a),
    listPackageSources: async (...a) => (await port()).listPackageSources(...a),
    patchArtifactGeneratorAnnotations: async (...a) =>
      (await port()).patchArtifactGeneratorAnnotations(...a),
    patchArtifactGeneratorConditions: async (...a) =>
      (await port()).patchArtifactGeneratorConditions(...a),
    patchPackageSourceConditions: async (...a) => (await port()).patchPackageSourceConditions(...a),
    getPingSource: async (...a) => (await port()).getPingSource(...a),
    createPingSource: async (...a) => (await port()).createPingSource(...a),
    patchPingSource: async (...a) => (await port()).patchPingSource(...a),
    deletePingSource: async (...a) => (await port()).deletePingSource(...a),
    createEvent: async (...a) => (await port()).createEvent(...a),
    getEvent: async (...a) => (await port()).getEvent(...a),
    patchEventSeries: async (...a) => (await port()).patchEventSeries(...a),
    listServedResources: async (...a) => (await port()).listServedResources(...a),
  };
}
