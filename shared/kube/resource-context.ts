// What every resource's calls of the KubePort share (client.ts builds one per client): the typed
// call, the field manager every write names, the LIST page reader and the input checks that
// refuse bad input before any request (nothing is sent, nothing changes).

import type { Condition } from '../core/objects/types.js';
import { isDns1123Subdomain } from '../core/codecs/names.js';
import { InvalidError } from './errors.js';
import { describeTarget, type RequestTarget } from './errors-map.js';
import type { AnnotationPatch, ListOptions, ListPage, ReadOptions, WriteOptions } from './port.js';
import { listPage, type Call } from './rest-call.js';

export const DEFAULT_LIST_LIMIT = 500;
export const MERGE_PATCH = 'application/merge-patch+json';

export interface ResourceContext {
  /** Sends one request; a 2xx JSON object comes back, everything else is thrown as a KubeError. */
  readonly call: Call;
  /** The query of every create and patch. */
  readonly writeQuery: { fieldManager: string };
  /** One LIST page (limit checked, default DEFAULT_LIST_LIMIT). */
  list<T>(target: RequestTarget, path: string, o: ListOptions): Promise<ListPage<T>>;
}

export function createResourceContext(call: Call, fieldManager: string): ResourceContext {
  return {
    call,
    writeQuery: { fieldManager },
    async list<T>(target: RequestTarget, path: string, o: ListOptions): Promise<ListPage<T>> {
      const limit = o.limit ?? DEFAULT_LIST_LIMIT;
      if (!Number.isInteger(limit) || limit <= 0) {
        throw new InvalidError(
          `${target.verb} ${target.resource}: limit must be a positive integer`,
        );
      }
      return listPage<T>(call, target, path, { ...o, limit });
    },
  };
}

export function cachedQuery(o: ReadOptions): Record<string, string> {
  return o.cached === true ? { resourceVersion: '0' } : {};
}

export function precondition(o: WriteOptions): { resourceVersion?: string } {
  return o.resourceVersion !== undefined ? { resourceVersion: o.resourceVersion } : {};
}

export function statusPatch(conditions: Condition[], o: WriteOptions): Record<string, unknown> {
  return {
    ...(o.resourceVersion !== undefined
      ? { metadata: { resourceVersion: o.resourceVersion } }
      : {}),
    status: { conditions },
  };
}

export function checkName(target: RequestTarget, field: string, value: string): void {
  if (!isDns1123Subdomain(value)) {
    throw new InvalidError(
      `${describeTarget(target)}: ${field} ${JSON.stringify(String(value).slice(0, 64))} is not a valid Kubernetes name`,
    );
  }
}

export function checkAnnotations(target: RequestTarget, annotations: AnnotationPatch): void {
  if (!isPlainObject(annotations)) {
    throw new InvalidError(`${describeTarget(target)}: annotations must be an object`);
  }
  for (const [key, value] of Object.entries(annotations)) {
    if (key === '' || (value !== null && typeof value !== 'string')) {
      throw new InvalidError(
        `${describeTarget(target)}: annotation ${JSON.stringify(key)} must map to a string or null`,
      );
    }
  }
}

export function checkConditions(target: RequestTarget, conditions: Condition[]): void {
  if (!Array.isArray(conditions) || !conditions.every(isPlainObject)) {
    throw new InvalidError(`${describeTarget(target)}: conditions must be an array of objects`);
  }
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
