// The renders of knative/ the manifest tests read: the base and its two overlays.

import { findRecoveryConfig, renderKustomize, type K8sObject } from '../../support/manifests.js';

export const BASE = 'knative';
export const OBSERVE = 'knative/overlays/observe';
export const FLUX_ONLY = 'knative/overlays/flux-only';
/** Every render that is shipped: the base and both overlays. */
export const RENDERS = [BASE, OBSERVE, FLUX_ONLY];

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
