// The renders of knative/ the manifest tests read: the base and its two overlays.

import { renderKustomize, type K8sObject } from '../../support/manifests.js';

export const BASE = 'knative';
export const OBSERVE = 'knative/overlays/observe';
export const FLUX_ONLY = 'knative/overlays/flux-only';
/** Every render that is shipped: the base and both overlays. */
export const RENDERS = [BASE, OBSERVE, FLUX_ONLY];

export const base = (): K8sObject[] => renderKustomize(BASE);
export const observe = (): K8sObject[] => renderKustomize(OBSERVE);
