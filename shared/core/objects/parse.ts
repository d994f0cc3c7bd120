// Defensive parsing of untrusted input (event data, API responses) into the core's shapes.
// Never throws; always returns a new object; bounds the work done on hostile input.

import { cleanCondition } from './conditions.js';
import { SIGNAL_LOST_WRITE, type ActionData } from './cloudevent-types.js';
import { isDns1123Label, isDns1123Subdomain } from '../codecs/names.js';
import { isFiniteNumber, isPlainObject } from '../codecs/plain.js';
import { parseTime } from '../codecs/time.js';
import type {
  ArtifactGenerator,
  ArtifactGeneratorStatus,
  Condition,
  InventoryEntry,
  ObjectMeta,
  OwnerReference,
  PackageSource,
  PackageSourceStatus,
} from './types.js';
import { AG_KIND, PS_KIND } from './types.js';

export const MAX_CONDITIONS = 64;
export const MAX_ANNOTATIONS = 4096;
export const MAX_ANNOTATION_VALUE_LENGTH = 64 * 1024;
export const MAX_OWNER_REFERENCES = 64;
export const MAX_INVENTORY = 1000;

export function parseArtifactGenerator(
  data: unknown,
): { ok: true; ag: ArtifactGenerator } | { ok: false; error: string } {
  try {
    const head = checkHead(data, AG_KIND, true);
    if (typeof head === 'string') return { ok: false, error: head };
    const ag: ArtifactGenerator = { metadata: normalizeMeta(head.metadata, true) };
    copyTypeMeta(head.obj, ag);
    if (isPlainObject(head.obj['spec'])) ag.spec = { ...head.obj['spec'] };
    const status = head.obj['status'];
    if (isPlainObject(status)) ag.status = normalizeAgStatus(status);
    return { ok: true, ag };
  } catch (err) {
    return { ok: false, error: `unreadable ArtifactGenerator: ${describe(err)}` };
  }
}

export function parsePackageSource(
  data: unknown,
): { ok: true; ps: PackageSource } | { ok: false; error: string } {
  try {
    const head = checkHead(data, PS_KIND, false);
    if (typeof head === 'string') return { ok: false, error: head };
    const ps: PackageSource = { metadata: normalizeMeta(head.metadata, false) };
    copyTypeMeta(head.obj, ps);
    if (isPlainObject(head.obj['spec'])) ps.spec = { ...head.obj['spec'] };
    const status = head.obj['status'];
    if (isPlainObject(status)) {
      const out: PackageSourceStatus = {};
      const conditions = normalizeConditions(status['conditions']);
      if (conditions !== undefined) out.conditions = conditions;
      if (status['variants'] !== undefined) out.variants = status['variants'];
      ps.status = out;
    }
    return { ok: true, ps };
  } catch (err) {
    return { ok: false, error: `unreadable PackageSource: ${describe(err)}` };
  }
}

export function parseActionData(
  data: unknown,
): { ok: true; value: ActionData } | { ok: false; error: string } {
  try {
    if (!isPlainObject(data)) return { ok: false, error: 'action data must be a JSON object' };
    const { namespace, name, uid, resourceVersion, attempts, decidedAt, signal } = data;
    const problems: string[] = [];
    if (!isDns1123Subdomain(namespace)) problems.push('namespace must be a Kubernetes name');
    if (!isDns1123Subdomain(name)) problems.push('name must be a Kubernetes name');
    if (typeof resourceVersion !== 'string') problems.push('resourceVersion must be a string');
    if (!(typeof attempts === 'number' && Number.isSafeInteger(attempts) && attempts >= 0)) {
      problems.push('attempts must be a whole number >= 0');
    }
    if (parseTime(decidedAt) === null) problems.push('decidedAt must be an RFC 3339 time');
    if (uid !== undefined && typeof uid !== 'string') problems.push('uid must be a string');
    if (signal !== undefined && signal !== SIGNAL_LOST_WRITE) {
      problems.push(`signal must be absent or "${SIGNAL_LOST_WRITE}"`);
    }
    if (problems.length > 0)
      return { ok: false, error: `invalid action data: ${problems.join('; ')}` };
    const value: ActionData = {
      namespace: namespace as string,
      name: name as string,
      resourceVersion: resourceVersion as string,
      attempts: attempts as number,
      decidedAt: decidedAt as string,
    };
    if (typeof uid === 'string') value.uid = uid;
    if (signal === SIGNAL_LOST_WRITE) value.signal = SIGNAL_LOST_WRITE;
    return { ok: true, value };
  } catch (err) {
    return { ok: false, error: `unreadable action data: ${describe(err)}` };
  }
}

interface Head {
  obj: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

function checkHead(data: unknown, kind: string, namespaced: boolean): Head | string {
  if (!isPlainObject(data)) return `${kind} must be a JSON object`;
  const k = data['kind'];
  if (k !== undefined && k !== kind) return `kind must be ${kind}, got ${show(k)}`;
  const metadata = data['metadata'];
  if (!isPlainObject(metadata)) return `${kind} metadata must be an object`;
  if (!isDns1123Subdomain(metadata['name'])) {
    return `${kind} metadata.name must be a Kubernetes name (DNS-1123 subdomain), got ${show(metadata['name'])}`;
  }
  if (namespaced && !isDns1123Label(metadata['namespace'])) {
    return `${kind} metadata.namespace must be a Kubernetes namespace name (DNS-1123 label), got ${show(metadata['namespace'])}`;
  }
  return { obj: data, metadata };
}

function copyTypeMeta(
  from: Record<string, unknown>,
  to: { apiVersion?: string; kind?: string },
): void {
  if (typeof from['apiVersion'] === 'string') to.apiVersion = from['apiVersion'];
  if (typeof from['kind'] === 'string') to.kind = from['kind'];
}

function normalizeMeta(m: Record<string, unknown>, namespaced: boolean): ObjectMeta {
  const out: ObjectMeta = { name: m['name'] as string };
  if (namespaced) out.namespace = m['namespace'] as string;
  for (const key of ['uid', 'resourceVersion', 'creationTimestamp', 'deletionTimestamp'] as const) {
    const v = m[key];
    if (typeof v === 'string') out[key] = v;
  }
  if (isFiniteNumber(m['generation'])) out.generation = m['generation'];
  const annotations = stringMap(m['annotations']);
  if (annotations !== undefined) out.annotations = annotations;
  const labels = stringMap(m['labels']);
  if (labels !== undefined) out.labels = labels;
  const refs = m['ownerReferences'];
  if (Array.isArray(refs)) {
    out.ownerReferences = (refs as unknown[])
      .slice(0, MAX_OWNER_REFERENCES)
      .filter(isPlainObject)
      .map(normalizeOwnerRef);
  }
  return out;
}

function normalizeOwnerRef(r: Record<string, unknown>): OwnerReference {
  const out: OwnerReference = {};
  for (const key of ['apiVersion', 'kind', 'name', 'uid'] as const) {
    const v = r[key];
    if (typeof v === 'string') out[key] = v;
  }
  if (typeof r['controller'] === 'boolean') out.controller = r['controller'];
  return out;
}

/** String-valued entries only; at most MAX_ANNOTATIONS entries considered; long values dropped. */
function stringMap(value: unknown): Record<string, string> | undefined {
  if (!isPlainObject(value)) return undefined;
  const out: Record<string, string> = {};
  let seen = 0;
  for (const key in value) {
    if (seen++ >= MAX_ANNOTATIONS) break;
    if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
    const v = value[key];
    if (typeof v !== 'string' || v.length > MAX_ANNOTATION_VALUE_LENGTH) continue;
    // `__proto__` is the one key an assignment would not store as its own property (it would
    // set the prototype); defineProperty for every key costs the no-op path (bench P3).
    if (key === '__proto__') {
      Object.defineProperty(out, key, {
        value: v,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else {
      out[key] = v;
    }
  }
  return out;
}

function normalizeConditions(value: unknown): Condition[] | undefined {
  if (!Array.isArray(value)) return undefined;
  return (value as unknown[]).slice(0, MAX_CONDITIONS).filter(isPlainObject).map(cleanCondition);
}

function normalizeAgStatus(s: Record<string, unknown>): ArtifactGeneratorStatus {
  const out: ArtifactGeneratorStatus = {};
  const conditions = normalizeConditions(s['conditions']);
  if (conditions !== undefined) out.conditions = conditions;
  const inventory = s['inventory'];
  if (Array.isArray(inventory)) {
    out.inventory = (inventory as unknown[])
      .slice(0, MAX_INVENTORY)
      .filter(isPlainObject)
      .map(inventoryEntry);
  }
  for (const key of ['observedSourcesDigest', 'lastHandledReconcileAt'] as const) {
    const v = s[key];
    if (typeof v === 'string') out[key] = v;
  }
  return out;
}

/** The fields the core reads of an inventory entry (read one by one: detect's no-op path, P3). */
function inventoryEntry(e: Record<string, unknown>): InventoryEntry {
  const entry: InventoryEntry = {};
  const { kind, name, namespace, digest, filename } = e;
  if (typeof kind === 'string') entry.kind = kind;
  if (typeof name === 'string') entry.name = name;
  if (typeof namespace === 'string') entry.namespace = namespace;
  if (typeof digest === 'string') entry.digest = digest;
  if (typeof filename === 'string') entry.filename = filename;
  return entry;
}

function show(value: unknown): string {
  const text = typeof value === 'string' ? value : typeof value;
  return JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text);
}

function describe(err: unknown): string {
  try {
    return err instanceof Error ? err.message : String(err);
  } catch {
    return 'unknown error';
  }
}
