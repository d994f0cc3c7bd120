// The renders of knative/ the manifest tests read: the base and its overlays.

import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import {
  findRecoveryConfig,
  KNATIVE_DIR,
  renderKustomize,
  type K8sObject,
} from '../../support/manifests.js';

export const BASE = 'knative';
export const OBSERVE = 'knative/overlays/observe';
export const FLUX_ONLY = 'knative/overlays/flux-only';
/** The install present but doing nothing: no sources, no Triggers (docs/adr/0067). */
export const OFF = 'knative/overlays/off';
/** Every render that is shipped: the base and its overlays. */
export const RENDERS = [BASE, OBSERVE, FLUX_ONLY, OFF];
/** Every kustomize entry point: the base and each directory of knative/overlays/, read from disk. */
export const ENTRY_POINTS = [
  BASE,
  ...readdirSync(path.join(KNATIVE_DIR, 'overlays'))
    .filter((d) => statSync(path.join(KNATIVE_DIR, 'overlays', d)).isDirectory())
    .sort()
    .map((d) => `knative/overlays/${d}`),
];
/** The renders whose sources and Triggers deliver events: all but OFF. */
export const WIRED = [BASE, OBSERVE, FLUX_ONLY];

/**
 * The kinds the API server keeps without a namespace (kustomize's built-in schema does not know
 * the VAP kinds, so a `namespace:` overlay would give them one).
 */
export const CLUSTER_SCOPED: ReadonlySet<string> = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
]);

export const base = (): K8sObject[] => renderKustomize(BASE);
export const observe = (): K8sObject[] => renderKustomize(OBSERVE);
/** The data of the recovery-config ConfigMap in a render (it must be there, once; its name is hashed). */
export const recoveryConfig = (objects: readonly K8sObject[]): Record<string, string> =>
  findRecoveryConfig(objects).data;
