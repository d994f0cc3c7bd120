// The heal decision (docs/adr/0038, docs/adr/0054): whether an AG's ExternalArtifacts have drifted
// by source-watcher's own rule, whether the drift is foreign (not an honest build in flight), and
// what heals it, acting only when source-watcher will rebuild and only on objects it generated for
// this AG. Each rule names the source-watcher code it follows in ADR 54.

import { REASON_FORCED, readyOf } from '../objects/conditions.js';
import {
  digestOf,
  field,
  generatorUidOf,
  LABEL_MANAGED_BY,
  sameObject,
  SOURCE_WATCHER_MANAGER,
  type EaDrift,
  type ExternalArtifact,
  type HealDecision,
  type LeaveReason,
  type RecreateTarget,
} from './objects.js';
import { isDns1123Label, isDns1123Subdomain } from '../codecs/names.js';
import { ownValue } from '../codecs/plain.js';
import {
  ANNOTATION_ATTEMPTS,
  ANNOTATION_LAST_RECOVERY_AT,
  ANNOTATION_REQUESTED_AT,
} from '../decision/tracking.js';
import {
  AG_API_GROUP,
  AG_KIND,
  type ArtifactGenerator,
  type InventoryEntry,
} from '../objects/types.js';

/** source-watcher's pause annotation (ReconcileAnnotation); `disabled` in any case pauses. */
export const ANNOTATION_SW_RECONCILE = 'source.extensions.fluxcd.io/reconcile';
const PAUSED_VALUE = 'disabled';
/** The Ready reason source-watcher writes when an ExternalArtifact apply fails. */
export const REASON_RECONCILIATION_FAILED = 'ReconciliationFailed';
/**
 * What follows the artifact's name in that Ready message when the failure is its status apply
 * (`<name> reconcile failed: failed to patchStatus ExternalArtifact status: <API error>`), and
 * what starts the API server's answer to a server-side apply that conflicts with another manager.
 */
const STATUS_APPLY_FAILED = ' reconcile failed: failed to patchStatus ExternalArtifact status: ';
const APPLY_CONFLICT = 'Apply failed with ';

/** source-watcher pauses this AG: it records requests (lastHandledReconcileAt) but builds nothing. */
export function isPaused(ag: ArtifactGenerator): boolean {
  const v = ownValue(ag.metadata?.annotations, ANNOTATION_SW_RECONCILE);
  return typeof v === 'string' && v.toLowerCase() === PAUSED_VALUE;
}

/**
 * Why the AG is not open to a heal (null: it is settled). Settled means: not being deleted, not
 * paused, no recovery of ours in progress (no tracking annotations, not our marker), Ready True on
 * the current generation, and no reconcile request pending (requestedAt, when set, already
 * handled). The last one is what makes a heal happen at most once per drift. `allowFailed`: Ready
 * False on the generation also counts (decideHeal then asks why it failed).
 */
export function notSettled(
  ag: ArtifactGenerator,
  { allowFailed = false }: { allowFailed?: boolean } = {},
): LeaveReason | null {
  const meta = ag.metadata;
  if (meta?.deletionTimestamp !== undefined) return 'deleting';
  if (isPaused(ag)) return 'paused';
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
 * The artifact whose status apply conflicted with another field manager, when that is what failed
 * the AG (Ready False/ReconciliationFailed with source-watcher's message for it); null otherwise.
 */
export function statusConflictOf(ag: ArtifactGenerator): string | null {
  const ready = readyOf(ag);
  if (ready?.status !== 'False' || ready.reason !== REASON_RECONCILIATION_FAILED) return null;
  const message = ready.message;
  if (typeof message !== 'string') return null;
  const at = message.indexOf(STATUS_APPLY_FAILED);
  if (at <= 0 || !message.startsWith(APPLY_CONFLICT, at + STATUS_APPLY_FAILED.length)) return null;
  const name = message.slice(0, at);
  return isDns1123Subdomain(name) ? name : null;
}

/** The ExternalArtifact entries of the inventory (v2.3 also lists managed Namespaces: skipped). */
export function artifactInventory(ag: ArtifactGenerator): InventoryEntry[] {
  const inventory = Array.isArray(ag.status?.inventory) ? ag.status.inventory : [];
  return inventory.filter(
    (e) =>
      typeof e === 'object' &&
      e !== null &&
      e.kind !== 'Namespace' &&
      typeof e.name === 'string' &&
      typeof e.namespace === 'string',
  );
}

/** The namespaces to list the AG's ExternalArtifacts in: its own, then those its inventory names. */
export function externalArtifactNamespaces(ag: ArtifactGenerator): string[] {
  const out: string[] = [];
  for (const ns of [ag.metadata?.namespace, ...artifactInventory(ag).map((e) => e.namespace)]) {
    if (isDns1123Label(ns) && !out.includes(ns)) out.push(ns);
  }
  return out;
}

/**
 * source-watcher's own rule (detectExternalArtifactsDrift): the ExternalArtifacts labelled with
 * the AG's uid match its inventory in count, and each entry by namespace, name and digest.
 */
export function matchesInventory(ag: ArtifactGenerator, eas: readonly ExternalArtifact[]): boolean {
  const inventory = artifactInventory(ag);
  if (eas.length !== inventory.length) return false;
  return inventory.every((entry) => {
    const ea = eas.find((e) => sameObject(e, entry.namespace, entry.name));
    return ea !== undefined && digestOf(ea) === entry.digest;
  });
}

/**
 * The field manager owning status.artifact.digest: 'none' when no managedFields entry lists it.
 * When several list it (shared ownership of an equal value), `preferred` (source-watcher's) counts
 * first.
 */
export function digestOwnerOf(ea: ExternalArtifact, preferred = SOURCE_WATCHER_MANAGER): string {
  const owners: string[] = [];
  const entries = ea.metadata?.managedFields;
  if (!Array.isArray(entries)) return 'none';
  for (const entry of entries) {
    if (typeof entry !== 'object' || entry === null) continue;
    const digest = field(field(field(entry.fieldsV1, 'f:status'), 'f:artifact'), 'f:digest');
    if (digest !== undefined && typeof entry.manager === 'string') owners.push(entry.manager);
  }
  if (owners.includes(preferred)) return preferred;
  return owners[0] ?? 'none';
}

/**
 * source-watcher's field manager for `ea` when `ea` is verifiably one it generated for `ag`, else
 * null. source-watcher applies every ExternalArtifact with its controller name as field manager and
 * as the managed-by label, the generator label set to the AG's uid and spec.sourceRef naming the
 * AG (reconcileExternalArtifact). All three must name this AG, and the managed-by manager must have
 * applied the object's spec.sourceRef (its managedFields).
 */
export function managerOf(ea: ExternalArtifact, ag: ArtifactGenerator): string | null {
  const uid = ag.metadata?.uid;
  if (typeof uid !== 'string' || uid === '' || generatorUidOf(ea) !== uid) return null;
  const manager = ownValue(ea.metadata?.labels, LABEL_MANAGED_BY);
  if (typeof manager !== 'string' || manager === '') return null;
  const ref = ea.spec?.sourceRef;
  if (
    typeof ref !== 'object' ||
    ref === null ||
    ref.kind !== AG_KIND ||
    typeof ref.apiVersion !== 'string' ||
    !ref.apiVersion.startsWith(`${AG_API_GROUP}/`) ||
    ref.name !== ag.metadata?.name ||
    ref.namespace !== ag.metadata?.namespace
  ) {
    return null;
  }
  const entries = ea.metadata?.managedFields;
  if (!Array.isArray(entries)) return null;
  const applied = entries.some(
    (e) =>
      typeof e === 'object' &&
      e !== null &&
      e.manager === manager &&
      e.operation === 'Apply' &&
      (e.subresource ?? '') === '' &&
      field(field(e.fieldsV1, 'f:spec'), 'f:sourceRef') !== undefined,
  );
  return applied ? manager : null;
}

/**
 * The `namespace/name`s a build of `ag` generates, when known from the spec: spec.artifacts' names
 * (and v2.3's spec.artifacts[].namespace, defaulting to the AG's). With spec.pathPattern the names
 * are templates rendered from the sources, so the inventory's names are the generated ones.
 */
function generatedNames(ag: ArtifactGenerator): Set<string> {
  const names = new Set<string>();
  const agNamespace = ag.metadata?.namespace ?? '';
  const pattern = ag.spec?.['pathPattern'];
  if (typeof pattern === 'string' && pattern !== '') {
    for (const e of artifactInventory(ag)) names.add(`${e.namespace}/${e.name}`);
    return names;
  }
  const artifacts = ag.spec?.['artifacts'];
  if (!Array.isArray(artifacts)) return names;
  for (const a of artifacts) {
    if (typeof a !== 'object' || a === null) continue;
    const { name, namespace } = a as { name?: unknown; namespace?: unknown };
    const ns = typeof namespace === 'string' && namespace !== '' ? namespace : agNamespace;
    if (typeof name === 'string') names.add(`${ns}/${name}`);
  }
  return names;
}

/**
 * What to do about `ag` given its ExternalArtifacts (labelled with its uid, in the namespaces of
 * externalArtifactNamespaces):
 * - leave it: not settled (see notSettled); failed for any reason but the status-apply conflict on
 *   an artifact that is drifted here; in step with its inventory; every difference is an honest
 *   build in flight; or a drifted object whose digest another manager owns is not verifiably
 *   source-watcher's for this AG (managerOf): neither deleted nor bumped into a conflict.
 *   source-watcher applies the ExternalArtifacts before it writes the new inventory, so for a
 *   moment the objects it has just written differ from the inventory; a difference counts only
 *   when source-watcher did not make it: an inventory entry whose ExternalArtifact is gone while a
 *   build still generates it, or a digest that another field manager (or none) owns.
 *   ExternalArtifacts that are not in the inventory are left alone: a rebuild does not remove them.
 * - heal it: bump requestedAt (when no request is pending) so source-watcher rebuilds and
 *   re-applies, after deleting every drifted ExternalArtifact whose digest another field manager
 *   owns: source-watcher's server-side apply of its status would conflict on that field and fail
 *   the AG; a re-created object has no such owner. An object already deleted (the bump after it
 *   failed) is gone and the inventory still names it: a missing drift, so the bump is done next.
 */
export function decideHeal(ag: ArtifactGenerator, eas: readonly ExternalArtifact[]): HealDecision {
  const blocked = notSettled(ag, { allowFailed: true });
  if (blocked !== null && blocked !== 'request-pending') return { kind: 'leave', why: blocked };
  const failed = readyOf(ag)?.status === 'False';
  const conflicted = failed ? statusConflictOf(ag) : null;
  if (failed && conflicted === null) return { kind: 'leave', why: 'failed' };
  const uid = ag.metadata?.uid;
  const own = eas.filter((e) => uid !== undefined && generatorUidOf(e) === uid);
  if (matchesInventory(ag, own)) return { kind: 'leave', why: 'in-step' };

  const generated = generatedNames(ag);
  const drift: EaDrift[] = [];
  const recreate: RecreateTarget[] = [];
  let notOurs = false;
  for (const entry of artifactInventory(ag)) {
    const namespace = entry.namespace ?? '';
    const name = entry.name ?? '';
    const ea = own.find((e) => sameObject(e, namespace, name));
    if (ea === undefined) {
      if (generated.has(`${namespace}/${name}`)) drift.push({ kind: 'missing', namespace, name });
      continue;
    }
    if (digestOf(ea) === entry.digest) continue;
    const manager = managerOf(ea, ag);
    const owner = digestOwnerOf(ea, manager ?? SOURCE_WATCHER_MANAGER);
    if (manager !== null && owner === manager) continue; // its own write, the inventory follows
    drift.push({ kind: 'digest', namespace, name });
    if (owner === 'none') continue; // no one owns the digest: a bump alone re-applies it
    if (manager === null) {
      notOurs = true;
      continue;
    }
    const eaUid = ea.metadata?.uid;
    const resourceVersion = ea.metadata?.resourceVersion;
    if (typeof eaUid === 'string' && typeof resourceVersion === 'string') {
      recreate.push({ namespace, name, uid: eaUid, resourceVersion, owner, manager });
    }
  }
  if (drift.length === 0) return { kind: 'leave', why: 'honest-build' };
  // A drifted object that is not source-watcher's for this AG: neither deleted nor bumped into
  // (its foreign digest would fail the rebuild).
  if (notOurs) return { kind: 'leave', why: 'not-ours' };
  if (conflicted !== null && !drift.some((d) => d.name === conflicted)) {
    return { kind: 'leave', why: 'failed' };
  }
  const bump = blocked === null;
  if (!bump && recreate.length === 0) return { kind: 'leave', why: 'request-pending' };
  return { kind: 'heal', drift, recreate, bump };
}
