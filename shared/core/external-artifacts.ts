// ExternalArtifact drift (docs/adr/0038-heal-external-artifacts.md): source-watcher does not watch
// the ExternalArtifacts it generates (fluxcd/source-watcher#346), so one deleted or changed by
// someone else stays wrong until its hourly requeue. This decides, purely, whether an AG's
// ExternalArtifacts have drifted by source-watcher's own rule, whether the drift is foreign (not
// an honest build in flight) and what heals it.

import { REASON_FORCED, readyOf } from './conditions.js';
import { isDns1123Label, isDns1123Subdomain } from './names.js';
import { ownValue } from './plain.js';
import { compareResourceVersions } from './resource-version.js';
import {
  ANNOTATION_ATTEMPTS,
  ANNOTATION_LAST_RECOVERY_AT,
  ANNOTATION_REQUESTED_AT,
} from './tracking.js';
import {
  AG_API_GROUP,
  AG_KIND,
  type AgRef,
  type ArtifactGenerator,
  type ObjectMeta,
} from './types.js';

export const EA_API_GROUP = 'source.toolkit.fluxcd.io';
export const EA_API_VERSION = 'source.toolkit.fluxcd.io/v1';
export const EA_KIND = 'ExternalArtifact';
export const EA_PLURAL = 'externalartifacts';
/** The label source-watcher puts on every ExternalArtifact it generates: the AG's uid. */
export const LABEL_GENERATOR = 'source.extensions.fluxcd.io/generator';
/** source-watcher's field manager (its managedFields entries, as recorded). */
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
}

export type EaDriftKind = 'missing' | 'digest';

export interface EaDrift {
  kind: EaDriftKind;
  namespace: string;
  name: string;
}

export type LeaveReason =
  'deleting' | 'recovery' | 'not-ready' | 'request-pending' | 'in-step' | 'honest-build';

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
 * Why the AG is not open to a heal (null: it is settled). Settled means: not being deleted, no
 * recovery of ours in progress (no tracking annotations, not our marker), Ready True on the current
 * generation, and no reconcile request pending (requestedAt, when set, already handled). The last
 * one is what makes a heal happen at most once per drift: our own bump is pending until
 * source-watcher has handled it. `allowFailed`: Ready False on the generation also counts.
 */
export function notSettled(ag: ArtifactGenerator, allowFailed = false): LeaveReason | null {
  const meta = ag.metadata;
  if (meta?.deletionTimestamp !== undefined) return 'deleting';
  const annotations: unknown = meta?.annotations;
  if (
    ownValue(annotations, ANNOTATION_ATTEMPTS) !== undefined ||
    ownValue(annotations, ANNOTATION_LAST_RECOVERY_AT) !== undefined
  ) {
    return 'recovery';
  }
  const ready = readyOf(ag);
  if (ready?.reason === REASON_FORCED) return 'recovery';
  const okStatus = ready?.status === 'True' || (allowFailed && ready?.status === 'False');
  if (!okStatus || (ready?.observedGeneration ?? -1) !== (meta?.generation ?? 0)) {
    return 'not-ready';
  }
  if (requestPending(ag)) return 'request-pending';
  return null;
}

/** A requestedAt that source-watcher has not handled yet (lastHandledReconcileAt differs). */
export function requestPending(ag: ArtifactGenerator): boolean {
  const requested = ownValue(ag.metadata?.annotations, ANNOTATION_REQUESTED_AT);
  if (typeof requested !== 'string' || requested === '') return false;
  return ag.status?.lastHandledReconcileAt !== requested;
}

/**
 * source-watcher's own rule (detectExternalArtifactsDrift): the ExternalArtifacts labelled with
 * the AG's uid match its inventory in count, and each entry by namespace, name and digest.
 */
export function matchesInventory(ag: ArtifactGenerator, eas: readonly ExternalArtifact[]): boolean {
  const inventory = Array.isArray(ag.status?.inventory) ? ag.status.inventory : [];
  if (eas.length !== inventory.length) return false;
  return inventory.every((entry) => {
    const ea = eas.find((e) => sameObject(e, entry?.namespace, entry?.name));
    return ea !== undefined && digestOf(ea) === entry?.digest;
  });
}

/**
 * The field manager owning status.artifact.digest: 'none' when no managedFields entry lists it.
 * When several list it (shared ownership of an equal value), source-watcher's counts first.
 */
export function digestOwnerOf(ea: ExternalArtifact): string {
  const owners: string[] = [];
  const entries = ea.metadata?.managedFields;
  if (!Array.isArray(entries)) return 'none';
  for (const entry of entries) {
    if (typeof entry !== 'object' || entry === null) continue;
    const status = field(entry.fieldsV1, 'f:status');
    const digest = field(field(status, 'f:artifact'), 'f:digest');
    if (digest !== undefined && typeof entry.manager === 'string') owners.push(entry.manager);
  }
  if (owners.includes(SOURCE_WATCHER_MANAGER)) return SOURCE_WATCHER_MANAGER;
  return owners[0] ?? 'none';
}

/**
 * What to do about `ag` given the cluster's ExternalArtifacts labelled with its uid:
 * - leave it: not settled (see notSettled), in step with its inventory, or every difference is
 *   an honest build in flight. source-watcher applies the ExternalArtifacts before it writes the
 *   new inventory, so for a moment the objects it has just written differ from the inventory; a
 *   difference counts only when source-watcher did not make it: an inventory entry whose
 *   ExternalArtifact is gone while the spec still declares it, or a digest that another field
 *   manager (or none) owns. ExternalArtifacts that are not in the inventory are left alone: a
 *   rebuild does not remove them.
 * - heal it: bump requestedAt (when no request is pending) so source-watcher rebuilds and
 *   re-applies, after deleting every drifted ExternalArtifact whose digest another field manager
 *   owns: source-watcher's server-side apply would conflict on that field and fail the AG
 *   (Ready=False/ReconciliationFailed); a re-created object has no such owner.
 * An AG whose Ready is False on its generation is open to a heal only when a recreate is needed
 * (the conflict is what failed it); its bump, if one is pending, is left alone.
 */
export function decideHeal(ag: ArtifactGenerator, eas: readonly ExternalArtifact[]): HealDecision {
  const failed = readyOf(ag)?.status === 'False';
  const blocked = notSettled(ag, true);
  if (blocked !== null && blocked !== 'request-pending') return { kind: 'leave', why: blocked };
  if (matchesInventory(ag, eas)) return { kind: 'leave', why: 'in-step' };

  const declared = declaredArtifacts(ag);
  const drift: EaDrift[] = [];
  const recreate: RecreateTarget[] = [];
  const inventory = Array.isArray(ag.status?.inventory) ? ag.status.inventory : [];
  for (const entry of inventory) {
    const namespace = entry?.namespace;
    const name = entry?.name;
    if (typeof namespace !== 'string' || typeof name !== 'string') continue;
    const ea = eas.find((e) => sameObject(e, namespace, name));
    if (ea === undefined) {
      if (declared.has(name)) drift.push({ kind: 'missing', namespace, name });
      continue;
    }
    if (digestOf(ea) === entry.digest) continue;
    const owner = digestOwnerOf(ea);
    if (owner === SOURCE_WATCHER_MANAGER) continue; // its own write, the inventory follows
    drift.push({ kind: 'digest', namespace, name });
    const uid = ea.metadata?.uid;
    const resourceVersion = ea.metadata?.resourceVersion;
    if (owner !== 'none' && typeof uid === 'string' && typeof resourceVersion === 'string') {
      recreate.push({ namespace, name, uid, resourceVersion, owner });
    }
  }
  if (drift.length === 0) return { kind: 'leave', why: 'honest-build' };
  if (failed && recreate.length === 0) return { kind: 'leave', why: 'not-ready' };
  const bump = blocked === null;
  if (!bump && recreate.length === 0) return { kind: 'leave', why: 'request-pending' };
  return { kind: 'heal', drift, recreate, bump };
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

/** The names of spec.artifacts (what a build generates). */
function declaredArtifacts(ag: ArtifactGenerator): Set<string> {
  const artifacts = ag.spec?.['artifacts'];
  const names = new Set<string>();
  if (!Array.isArray(artifacts)) return names;
  for (const a of artifacts) {
    const name = typeof a === 'object' && a !== null ? (a as { name?: unknown }).name : undefined;
    if (typeof name === 'string') names.add(name);
  }
  return names;
}

function digestOf(ea: ExternalArtifact): string | undefined {
  const d = ea.status?.artifact?.digest;
  return typeof d === 'string' ? d : undefined;
}

function sameObject(ea: ExternalArtifact, namespace: unknown, name: unknown): boolean {
  return ea.metadata?.namespace === namespace && ea.metadata?.name === name;
}

function sameAs(a: ExternalArtifact, b: ExternalArtifact): boolean {
  return sameObject(a, b.metadata?.namespace, b.metadata?.name);
}

/** a is strictly newer than b by resourceVersion; false when not comparable. */
function newer(a: ExternalArtifact, b: ExternalArtifact): boolean {
  return compareResourceVersions(a.metadata?.resourceVersion, b.metadata?.resourceVersion) === 1;
}

function field(fields: unknown, key: string): unknown {
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
