// Finds the kubeconfig: an explicit path first, else what client-node's loadFromDefault finds
// (the KUBECONFIG variable, then ~/.kube/config, then the in-cluster service account).
// Nothing here logs, and error messages name files, never their contents.

import { KubeConfig } from '@kubernetes/client-node';

export interface LoadKubeConfigOptions {
  /** A kubeconfig file to use instead of the default search. */
  kubeconfigPath?: string;
}

// client-node's last resort when nothing is found: an unauthenticated http://localhost:8080.
const FALLBACK_SERVER = 'http://localhost:8080';

export class KubeConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KubeConfigError';
  }
}

export function loadKubeConfig(opts: LoadKubeConfigOptions = {}): KubeConfig {
  const kc = new KubeConfig();
  const path = opts.kubeconfigPath;
  if (path !== undefined && path !== '') {
    try {
      kc.loadFromFile(path);
    } catch (err) {
      throw new KubeConfigError(`cannot load kubeconfig file ${path}: ${errorSummary(err)}`);
    }
  } else {
    try {
      kc.loadFromDefault();
    } catch (err) {
      throw new KubeConfigError(`cannot load the default kubeconfig: ${errorSummary(err)}`);
    }
    const server = kc.getCurrentCluster()?.server;
    if (server === FALLBACK_SERVER && kc.getCurrentUser()?.name === 'user') {
      throw new KubeConfigError(
        'no kubeconfig found: set KUBECONFIG, create ~/.kube/config, or run in a pod with a service account',
      );
    }
  }
  const cluster = kc.getCurrentCluster();
  if (cluster === null || cluster.server === '') {
    throw new KubeConfigError('kubeconfig has no current cluster with a server address');
  }
  return kc;
}

/** The error's class and code: parse errors from the YAML reader can quote file contents. */
function errorSummary(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' ? `${err.name} ${code}` : err.name;
  }
  return 'unknown error';
}
