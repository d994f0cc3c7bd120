// Minimal, tolerant shapes of the objects the decision core reads. Every field is optional:
// the core never assumes the API server (or an event) gave it a complete object.

export interface Condition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

export interface OwnerReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
  uid?: string;
  controller?: boolean;
}

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  ownerReferences?: OwnerReference[];
}

export interface InventoryEntry {
  /** source-watcher v2.3: `ExternalArtifact` or `Namespace` (a managed Namespace); absent before. */
  kind?: string;
  name?: string;
  namespace?: string;
  digest?: string;
  filename?: string;
}

export interface ArtifactGeneratorStatus {
  conditions?: Condition[];
  inventory?: InventoryEntry[];
  observedSourcesDigest?: string;
  lastHandledReconcileAt?: string;
}

export interface ArtifactGenerator {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: Record<string, unknown>;
  status?: ArtifactGeneratorStatus;
}

export interface PackageSourceStatus {
  conditions?: Condition[];
  variants?: unknown;
}

export interface PackageSource {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: Record<string, unknown>;
  status?: PackageSourceStatus;
}

/** A namespaced object reference. */
export interface AgRef {
  namespace: string;
  name: string;
}

export const AG_API_GROUP = 'source.extensions.fluxcd.io';
export const AG_API_VERSION = 'source.extensions.fluxcd.io/v1beta1';
export const AG_KIND = 'ArtifactGenerator';
export const AG_PLURAL = 'artifactgenerators';

export const PS_API_GROUP = 'cozystack.io';
export const PS_API_VERSION = 'cozystack.io/v1alpha1';
export const PS_KIND = 'PackageSource';
export const PS_PLURAL = 'packagesources';

export const PING_API_VERSION = 'sources.knative.dev/v1';
export const PING_KIND = 'PingSource';
export const PING_PLURAL = 'pingsources';
