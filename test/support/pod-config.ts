// loadConfig as in a pod of the install: the namespace a pod learns from its ServiceAccount
// namespace file (shared/runtime/env.ts) is given as POD_NAMESPACE, since a test runs in no pod.

import { loadConfig, type FunctionConfig } from '../../shared/runtime/env.js';
import { RECOVERY_NAMESPACE } from './manifests.js';

export function loadPodConfig(
  env: Readonly<Record<string, string | undefined>> = {},
  namespace: string = RECOVERY_NAMESPACE,
): FunctionConfig {
  return loadConfig({ POD_NAMESPACE: namespace, ...env });
}
