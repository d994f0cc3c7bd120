// The port the functions use to talk to Kubernetes. The real implementation is
// shared/kube/client.ts (on @kubernetes/client-node); tests run it against a real API server.
// Every method throws only KubeError subclasses (see errors.ts).

import type { EventSeries, KubeEvent } from '../core/kube-events/vocabulary.js';
import type {
  AgRef,
  ArtifactGenerator,
  Condition,
  OwnerReference,
  PackageSource,
} from '../core/objects/types.js';

export interface ReadOptions {
  /** Serve from the API server's watch cache (resourceVersion=0): cheaper, may be slightly stale. */
  cached?: boolean;
}

export interface ListOptions extends ReadOptions {
  /** Restrict to one namespace; all namespaces when absent. */
  namespace?: string;
  /** Page size (default 500). */
  limit?: number;
  /** Continue token from the previous page. */
  continueToken?: string;
}

export interface ListPage<T> {
  items: T[];
  /** Present when there are more pages. */
  continueToken?: string;
  resourceVersion?: string;
}

export interface WriteOptions {
  /** When set, the write carries metadata.resourceVersion as a precondition (Conflict when stale). */
  resourceVersion?: string;
}

/** Options of the Event calls: they are best effort and get their own, shorter deadline. */
export interface EventCallOptions {
  /** Per-request deadline for this call; the client's default when absent. */
  timeoutMs?: number;
}

/**
 * An AG as it was just before a given version (docs/adr/0014-early-detection.md):
 * - found: its previous version;
 * - absent: it did not exist then (the given version created it);
 * - unavailable: the API server no longer has that history (compacted), or the resourceVersion is
 *   not a number the server can step back from. The caller decides without history.
 */
export type PreviousVersion =
  | { kind: 'found'; ag: ArtifactGenerator }
  | { kind: 'absent' }
  | { kind: 'unavailable'; why: 'compacted' | 'not-comparable' };

/** Annotation values to set (string) or delete (null), sent as a JSON merge patch. */
export type AnnotationPatch = Record<string, string | null>;

/** A Knative PingSource, reduced to the fields this product uses. */
export interface PingSource {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    ownerReferences?: OwnerReference[];
    creationTimestamp?: string;
  };
  spec?: {
    schedule?: string;
    timezone?: string;
    contentType?: string;
    data?: string;
    sink?: unknown;
    /** CloudEvent overrides: extensions added to every event (duckv1.CloudEventOverrides). */
    ceOverrides?: { extensions?: Record<string, string> };
  };
}

export interface KubePort {
  getArtifactGenerator(ref: AgRef, opts?: ReadOptions): Promise<ArtifactGenerator>;
  listArtifactGenerators(opts?: ListOptions): Promise<ListPage<ArtifactGenerator>>;
  /**
   * The AG as it was at resourceVersion - 1, i.e. its version just before `resourceVersion`: one
   * LIST of that one name with resourceVersionMatch=Exact (served from the API server's history;
   * resource versions are comparable integers since Kubernetes 1.35, KEP-5504).
   */
  getArtifactGeneratorBefore(ref: AgRef, resourceVersion: string): Promise<PreviousVersion>;
  getPackageSource(name: string, opts?: ReadOptions): Promise<PackageSource>;
  listPackageSources(opts?: Omit<ListOptions, 'namespace'>): Promise<ListPage<PackageSource>>;

  /** Merge-patch metadata.annotations of an AG (main resource). */
  patchArtifactGeneratorAnnotations(
    ref: AgRef,
    annotations: AnnotationPatch,
    opts?: WriteOptions,
  ): Promise<ArtifactGenerator>;
  /** Merge-patch status.conditions of an AG through the status subresource. */
  patchArtifactGeneratorConditions(
    ref: AgRef,
    conditions: Condition[],
    opts?: WriteOptions,
  ): Promise<ArtifactGenerator>;
  /** Merge-patch status.conditions of a PackageSource through the status subresource. */
  patchPackageSourceConditions(
    name: string,
    conditions: Condition[],
    opts?: WriteOptions,
  ): Promise<PackageSource>;

  getPingSource(namespace: string, name: string): Promise<PingSource>;
  createPingSource(namespace: string, body: PingSource): Promise<PingSource>;
  /** Merge-patch a PingSource (metadata and spec). */
  patchPingSource(
    namespace: string,
    name: string,
    patch: Record<string, unknown>,
    opts?: WriteOptions,
  ): Promise<PingSource>;
  /** Delete with an optional resourceVersion precondition. NotFound when already gone. */
  deletePingSource(namespace: string, name: string, opts?: WriteOptions): Promise<void>;

  /**
   * The resources (plurals) the API group version serves, from discovery. NotFound when the API
   * server does not serve that group version (its CRD is not installed).
   */
  listServedResources(group: string, version: string): Promise<string[]>;

  /** Create an events.k8s.io/v1 Event in its metadata.namespace. Conflict when the name exists. */
  createEvent(event: KubeEvent, opts?: EventCallOptions): Promise<KubeEvent>;
  getEvent(namespace: string, name: string, opts?: EventCallOptions): Promise<KubeEvent>;
  /** Merge-patch an Event's series (count, lastObservedTime), with a resourceVersion precondition. */
  patchEventSeries(
    namespace: string,
    name: string,
    series: EventSeries,
    opts: WriteOptions & EventCallOptions,
  ): Promise<KubeEvent>;
}

/** The field manager every write names. */
export const FIELD_MANAGER = 'source-watcher-recovery';
