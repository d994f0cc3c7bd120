// The shapes the simulator reads and writes. Objects come from the API server as JSON; every
// reader narrows defensively.

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface SimCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

export interface SimInventoryEntry {
  name: string;
  namespace: string;
  digest: string;
  filename: string;
}

export interface SimAgStatus {
  conditions?: SimCondition[];
  inventory?: SimInventoryEntry[];
  observedSourcesDigest?: string;
  lastHandledReconcileAt?: string;
  [field: string]: unknown;
}

export interface SimAgMeta {
  name: string;
  namespace: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  deletionTimestamp?: string;
  annotations?: Record<string, string>;
  finalizers?: string[];
  [field: string]: unknown;
}

export interface SimAg {
  apiVersion?: string;
  kind?: string;
  metadata: SimAgMeta;
  spec?: { sources?: unknown[]; artifacts?: unknown[]; [field: string]: unknown };
  status?: SimAgStatus;
}

/** `namespace/name`. */
export type AgKey = string;

export interface AgName {
  namespace: string;
  name: string;
}

export function keyOf(ref: AgName): AgKey {
  return `${ref.namespace}/${ref.name}`;
}

/** Accepts `namespace/name` or {namespace, name}; throws on anything else. */
export function toKey(ref: AgKey | AgName): AgKey {
  if (typeof ref === 'string') {
    const parts = ref.split('/');
    if (parts.length !== 2 || !parts[0] || !parts[1]) {
      throw new TypeError(
        `source-watcher-sim: key must be "namespace/name", got ${JSON.stringify(ref)}`,
      );
    }
    return ref;
  }
  if (
    !ref ||
    typeof ref.namespace !== 'string' ||
    typeof ref.name !== 'string' ||
    !ref.namespace ||
    !ref.name
  ) {
    throw new TypeError('source-watcher-sim: ref must have a non-empty namespace and name');
  }
  return keyOf(ref);
}

export function splitKey(key: AgKey): AgName {
  const [namespace = '', name = ''] = key.split('/');
  return { namespace, name };
}

/** Narrow an API object to SimAg, or undefined when it lacks a name or namespace. */
export function asAg(obj: unknown): SimAg | undefined {
  if (!obj || typeof obj !== 'object') return undefined;
  const meta = (obj as { metadata?: unknown }).metadata;
  if (!meta || typeof meta !== 'object') return undefined;
  const { name, namespace } = meta as { name?: unknown; namespace?: unknown };
  if (typeof name !== 'string' || typeof namespace !== 'string') return undefined;
  return obj as SimAg;
}
