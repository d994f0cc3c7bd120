// ExternalArtifacts as source-watcher generates them (docs/adr/0038, docs/adr/0054): their shape,
// the event's object and its owner AG, the label and the manager names source-watcher writes. The
// heal decision over them is heal.ts.

import { isDns1123Label, isDns1123Subdomain } from '../codecs/names.js';
import { ownValue } from '../codecs/plain.js';
import { compareResourceVersions } from '../codecs/resource-version.js';
import { AG_API_GROUP, AG_KIND, type AgRef, type ObjectMeta } from '../objects/types.js';

export const EA_API_GROUP = 'source.toolkit.fluxcd.io';
export const EA_API_VERSION = 'source.toolkit.fluxcd.io/v1';
export const EA_KIND = 'ExternalArtifact';
export const EA_PLURAL = 'externalartifacts';
/** The label source-watcher puts on every ExternalArtifact it generates: the AG's uid. */
export const LABEL_GENERATOR = 'source.extensions.fluxcd.io/generator';
/**
 * The label source-watcher puts on every ExternalArtifact it generates: its controller name, which
 * is also the field manager of its applies (reconcileExternalArtifact).
 */
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
/** source-watcher's default controller name (its field manager, the managed-by label's value). */
export const SOURCE_WATCHER_MANAGER = 'source-watcher';

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  subresource?: string;
  fieldsType?: string;
  fieldsV1?: unknown;
  time?: string;
}

export interface ExternalArtifact {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta & { managedFields?: ManagedFieldsEntry[] };
  spec?: {
    sourceRef?: { apiVersion?: string; kind?: string; name?: string; namespace?: string };
  };
  status?: {
    artifact?: { digest?: string; revision?: string; url?: string; path?: string };
    conditions?: unknown[];
  };
}

/** One ExternalArtifact to delete so that source-watcher re-creates it, with its preconditions. */
export interface RecreateTarget {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  /** The field manager that owns its status.artifact.digest. */
  owner: string;
  /** source-watcher's field manager, read from the object's managed-by label. */
  manager: string;
}

export type EaDriftKind = 'missing' | 'digest';

export interface EaDrift {
  kind: EaDriftKind;
  namespace: string;
  name: string;
}

export type LeaveReason =
  | 'deleting'
  | 'paused'
  | 'recovery'
  | 'not-ready'
  | 'failed'
  | 'request-pending'
  | 'in-step'
  | 'honest-build'
  | 'not-ours';

export type HealDecision =
  | { kind: 'leave'; why: LeaveReason }
  | { kind: 'heal'; drift: EaDrift[]; recreate: RecreateTarget[]; bump: boolean };

/**
 * The AG an ExternalArtifact was generated for: its spec.sourceRef names an ArtifactGenerator
 * (the namespace defaults to the ExternalArtifact's own). Null for any other ExternalArtifact.
 */
export function generatorOf(ea: ExternalArtifact): AgRef | null {
  const ref = ea.spec?.sourceRef;
  if (typeof ref !== 'object' || ref === null || ref.kind !== AG_KIND) return null;
  if (typeof ref.apiVersion === 'string' && !ref.apiVersion.startsWith(`${AG_API_GROUP}/`)) {
    return null;
  }
  const namespace = ref.namespace ?? ea.metadata?.namespace;
  if (!isDns1123Label(namespace) || !isDns1123Subdomain(ref.name)) return null;
  return { namespace, name: ref.name };
}

/** The generator label's value (the AG's uid), or null. */
export function generatorUidOf(ea: ExternalArtifact): string | null {
  const v = ownValue(ea.metadata?.labels, LABEL_GENERATOR);
  return typeof v === 'string' && v !== '' ? v : null;
}

/** A label selector for the ExternalArtifacts of the AG with this uid. */
export function generatorSelector(uid: string): string {
  return `${LABEL_GENERATOR}=${uid}`;
}

/**
 * The listed ExternalArtifacts with the event's object laid over them: a listed copy older than
 * the event (by resourceVersion) is replaced, and a deleted one is dropped (by uid), so that a
 * list served from a cache that lags the event still sees what the event saw.
 */
export function withObserved(
  listed: readonly ExternalArtifact[],
  observed: ExternalArtifact,
  deleted: boolean,
): ExternalArtifact[] {
  const uid = observed.metadata?.uid;
  const out: ExternalArtifact[] = [];
  let seen = false;
  for (const ea of listed) {
    const same = uid !== undefined ? ea.metadata?.uid === uid : sameAs(ea, observed);
    if (!same) {
      out.push(ea);
      continue;
    }
    seen = true;
    if (deleted) continue;
    out.push(newer(observed, ea) ? observed : ea);
  }
  if (!seen && !deleted && (observed.metadata?.labels !== undefined || uid !== undefined)) {
    out.push(observed);
  }
  return out;
}

/** status.artifact.digest, when it is a string. */
export function digestOf(ea: ExternalArtifact): string | undefined {
  const d = ea.status?.artifact?.digest;
  return typeof d === 'string' ? d : undefined;
}

export function sameObject(ea: ExternalArtifact, namespace: unknown, name: unknown): boolean {
  return ea.metadata?.namespace === namespace && ea.metadata?.name === name;
}

function sameAs(a: ExternalArtifact, b: ExternalArtifact): boolean {
  return sameObject(a, b.metadata?.namespace, b.metadata?.name);
}

/** a is strictly newer than b by resourceVersion; false when not comparable. */
function newer(a: ExternalArtifact, b: ExternalArtifact): boolean {
  return compareResourceVersions(a.metadata?.resourceVersion, b.metadata?.resourceVersion) === 1;
}

export function field(fields: unknown, key: string): unknown {
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) return undefined;
  return Object.prototype.hasOwnProperty.call(fields, key)
    ? (fields as Record<string, unknown>)[key]
    : undefined;
}

export type ParsedExternalArtifact =
  { ok: true; ea: ExternalArtifact } | { ok: false; error: string };

/** An ExternalArtifact from event data: an object with a valid namespace and name. */
export function parseExternalArtifact(data: unknown): ParsedExternalArtifact {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return { ok: false, error: 'data must be a JSON object' };
  }
  const meta = (data as { metadata?: unknown }).metadata;
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) {
    return { ok: false, error: 'metadata must be an object' };
  }
  const { namespace, name } = meta as { namespace?: unknown; name?: unknown };
  if (!isDns1123Label(namespace))
    return { ok: false, error: 'metadata.namespace is not a valid name' };
  if (!isDns1123Subdomain(name)) return { ok: false, error: 'metadata.name is not a valid name' };
  return { ok: true, ea: data as ExternalArtifact };
}
