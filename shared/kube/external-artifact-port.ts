// The port to Flux ExternalArtifacts (source.toolkit.fluxcd.io/v1), for the function that heals
// their drift (functions/heal-external-artifacts). Kept apart from KubePort so that a function
// that does not use them neither implements nor is granted them. Every method throws only
// KubeError subclasses.

import type { ExternalArtifact } from '../core/external-artifacts/objects.js';
import type { AgRef } from '../core/objects/types.js';
import type { ListPage, ReadOptions } from './port.js';

export interface ExternalArtifactListOptions extends ReadOptions {
  /** The namespace to list in (source-watcher's rule: the AG's, and those its inventory names). */
  namespace: string;
  /** A label selector, e.g. source.extensions.fluxcd.io/generator=<uid>. Required. */
  labelSelector: string;
  /** Page size (default 500). */
  limit?: number;
  continueToken?: string;
}

export interface DeletePreconditions {
  /** The object's uid: a re-created object of the same name is never deleted. */
  uid: string;
  /** The version that was judged: a changed object is not deleted (Conflict). */
  resourceVersion: string;
}

/** A ServiceAccount, as source-watcher v2.3 impersonates it (spec.serviceAccountName). */
export interface ServiceAccountRef {
  namespace: string;
  name: string;
}

export interface ExternalArtifactPort {
  /** ExternalArtifacts in one namespace matching the label selector. */
  listExternalArtifacts(opts: ExternalArtifactListOptions): Promise<ListPage<ExternalArtifact>>;
  /** Delete one, with uid and resourceVersion preconditions. NotFound when already gone. */
  deleteExternalArtifact(ref: AgRef, preconditions: DeletePreconditions): Promise<void>;
  /**
   * Whether the ServiceAccount may re-create an ExternalArtifact in `namespace` the way
   * source-watcher does (server-side apply: patch and create, then patch of the status), asked of
   * the API server's authorizer (SubjectAccessReview).
   */
  mayApplyExternalArtifacts(sa: ServiceAccountRef, namespace: string): Promise<boolean>;
}
