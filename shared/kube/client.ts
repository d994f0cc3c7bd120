// The KubePort on a real API server: raw REST requests through transport.ts (credentials and TLS
// from client-node's KubeConfig), JSON merge patches with resourceVersion preconditions, typed
// errors from errors-map.ts. See docs/adr/0004-kube-adapter.md for the choices.

import type { KubeConfig } from '@kubernetes/client-node';
import {
  AG_API_VERSION,
  AG_PLURAL,
  PING_API_VERSION,
  PING_KIND,
  PING_PLURAL,
  PS_API_VERSION,
  PS_PLURAL,
  type AgRef,
  type ArtifactGenerator,
  type Condition,
  type PackageSource,
} from '../core/types.js';
import { isDns1123Subdomain } from '../core/names.js';
import {
  EVENTS_API_VERSION,
  type EventSeries,
  type KubeEvent,
} from '../core/kube-event-content.js';
import { InvalidError, isKubeError } from './errors.js';
import { describeTarget, type RequestTarget, toKubeError } from './errors-map.js';
import type {
  AnnotationPatch,
  EventCallOptions,
  KubePort,
  ListOptions,
  ListPage,
  PingSource,
  PreviousVersion,
  ReadOptions,
  WriteOptions,
} from './port.js';
import { createCall, listPage } from './rest-call.js';
import { createTransport } from './transport.js';

export { loadKubeConfig, KubeConfigError, type LoadKubeConfigOptions } from './config.js';

export interface KubeClientOptions {
  kubeConfig: KubeConfig;
  /** Named on every create and patch. */
  fieldManager: string;
  /** Per-request timeout; a request without a complete answer by then is a TransientError. */
  requestTimeoutMs?: number;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
export const DEFAULT_LIST_LIMIT = 500;

const MERGE_PATCH = 'application/merge-patch+json';

const AG = { base: `/apis/${AG_API_VERSION}`, plural: AG_PLURAL };
const PS = { base: `/apis/${PS_API_VERSION}`, plural: PS_PLURAL };
const PING = { base: `/apis/${PING_API_VERSION}`, plural: PING_PLURAL };
const EVENTS = { base: `/apis/${EVENTS_API_VERSION}`, plural: 'events' };

export function createKubeClient(opts: KubeClientOptions): KubePort {
  const fieldManager = opts.fieldManager;
  if (fieldManager === '' || fieldManager.length > 128) {
    throw new InvalidError('fieldManager must be 1..128 characters');
  }
  const timeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new InvalidError('requestTimeoutMs must be a positive number');
  }
  const send = createTransport(opts.kubeConfig, timeoutMs);

  /** Sends one request; a 2xx JSON object comes back, everything else is thrown as a KubeError. */
  const call = createCall(send);

  async function list<T>(
    target: RequestTarget,
    path: string,
    o: ListOptions,
  ): Promise<ListPage<T>> {
    const limit = o.limit ?? DEFAULT_LIST_LIMIT;
    if (!Number.isInteger(limit) || limit <= 0) {
      throw new InvalidError(`${target.verb} ${target.resource}: limit must be a positive integer`);
    }
    return listPage<T>(call, target, path, { ...o, limit });
  }

  const writeQuery = { fieldManager };

  return {
    async getArtifactGenerator(ref: AgRef, o: ReadOptions = {}): Promise<ArtifactGenerator> {
      const target = agTarget('get', ref);
      return call(target, { method: 'GET', path: agPath(target, ref), query: cachedQuery(o) });
    },

    async listArtifactGenerators(o: ListOptions = {}): Promise<ListPage<ArtifactGenerator>> {
      const target: RequestTarget = { verb: 'list', resource: AG_PLURAL };
      if (o.namespace !== undefined) {
        target.namespace = o.namespace;
        checkName(target, 'namespace', o.namespace);
        return list(target, `${AG.base}/namespaces/${o.namespace}/${AG.plural}`, o);
      }
      return list(target, `${AG.base}/${AG.plural}`, o);
    },

    async getArtifactGeneratorBefore(
      ref: AgRef,
      resourceVersion: string,
    ): Promise<PreviousVersion> {
      const target = agTarget('list-history', ref);
      checkName(target, 'namespace', ref.namespace);
      checkName(target, 'name', ref.name);
      const before = previousResourceVersion(resourceVersion);
      if (before === null) return { kind: 'unavailable', why: 'not-comparable' };
      let raw: { items?: unknown };
      try {
        raw = await call<{ items?: unknown }>(target, {
          method: 'GET',
          path: `${AG.base}/namespaces/${ref.namespace}/${AG.plural}`,
          query: {
            fieldSelector: `metadata.name=${ref.name}`,
            resourceVersion: before,
            resourceVersionMatch: 'Exact',
          },
        });
      } catch (e) {
        // 410 Gone: that revision was compacted away.
        if (isKubeError(e, 'Conflict') && e.statusCode === 410) {
          return { kind: 'unavailable', why: 'compacted' };
        }
        throw e;
      }
      if (!Array.isArray(raw.items)) throw toKubeError({ kind: 'decode', statusCode: 200 }, target);
      const found = (raw.items as ArtifactGenerator[]).find((i) => i?.metadata?.name === ref.name);
      return found === undefined ? { kind: 'absent' } : { kind: 'found', ag: found };
    },

    async getPackageSource(name: string, o: ReadOptions = {}): Promise<PackageSource> {
      const target: RequestTarget = { verb: 'get', resource: PS_PLURAL, name };
      return call(target, { method: 'GET', path: psPath(target, name), query: cachedQuery(o) });
    },

    async listPackageSources(
      o: Omit<ListOptions, 'namespace'> = {},
    ): Promise<ListPage<PackageSource>> {
      const target: RequestTarget = { verb: 'list', resource: PS_PLURAL };
      return list(target, `${PS.base}/${PS.plural}`, o);
    },

    async patchArtifactGeneratorAnnotations(
      ref: AgRef,
      annotations: AnnotationPatch,
      o: WriteOptions = {},
    ): Promise<ArtifactGenerator> {
      const target = agTarget('patch', ref);
      const path = agPath(target, ref);
      checkAnnotations(target, annotations);
      return call(target, {
        method: 'PATCH',
        path,
        query: writeQuery,
        contentType: MERGE_PATCH,
        body: { metadata: { annotations, ...precondition(o) } },
      });
    },

    async patchArtifactGeneratorConditions(
      ref: AgRef,
      conditions: Condition[],
      o: WriteOptions = {},
    ): Promise<ArtifactGenerator> {
      const target = agTarget('patch-status', ref);
      const path = `${agPath(target, ref)}/status`;
      checkConditions(target, conditions);
      return call(target, {
        method: 'PATCH',
        path,
        query: writeQuery,
        contentType: MERGE_PATCH,
        body: statusPatch(conditions, o),
      });
    },

    async patchPackageSourceConditions(
      name: string,
      conditions: Condition[],
      o: WriteOptions = {},
    ): Promise<PackageSource> {
      const target: RequestTarget = { verb: 'patch-status', resource: PS_PLURAL, name };
      const path = `${psPath(target, name)}/status`;
      checkConditions(target, conditions);
      return call(target, {
        method: 'PATCH',
        path,
        query: writeQuery,
        contentType: MERGE_PATCH,
        body: statusPatch(conditions, o),
      });
    },

    async getPingSource(namespace: string, name: string): Promise<PingSource> {
      const target: RequestTarget = { verb: 'get', resource: PING_PLURAL, namespace, name };
      return call(target, { method: 'GET', path: pingPath(target, namespace, name) });
    },

    async createPingSource(namespace: string, body: PingSource): Promise<PingSource> {
      const name = body.metadata?.name;
      const target: RequestTarget = {
        verb: 'create',
        resource: PING_PLURAL,
        namespace,
        ...(name !== undefined ? { name } : {}),
      };
      checkName(target, 'namespace', namespace);
      checkName(target, 'name', name ?? '');
      if (body.metadata?.namespace !== undefined && body.metadata.namespace !== namespace) {
        throw new InvalidError(
          `${describeTarget(target)}: metadata.namespace ${body.metadata.namespace} differs from the namespace argument`,
        );
      }
      return call(target, {
        method: 'POST',
        path: `${PING.base}/namespaces/${namespace}/${PING.plural}`,
        query: writeQuery,
        body: {
          ...body,
          apiVersion: body.apiVersion ?? PING_API_VERSION,
          kind: body.kind ?? PING_KIND,
          metadata: { ...body.metadata, namespace },
        },
      });
    },

    async patchPingSource(
      namespace: string,
      name: string,
      patch: Record<string, unknown>,
      o: WriteOptions = {},
    ): Promise<PingSource> {
      const target: RequestTarget = { verb: 'patch', resource: PING_PLURAL, namespace, name };
      const path = pingPath(target, namespace, name);
      if (!isPlainObject(patch))
        throw new InvalidError(`${describeTarget(target)}: patch must be an object`);
      const meta = patch['metadata'];
      if (meta !== undefined && meta !== null && !isPlainObject(meta)) {
        throw new InvalidError(`${describeTarget(target)}: patch.metadata must be an object`);
      }
      const body =
        o.resourceVersion !== undefined
          ? {
              ...patch,
              metadata: {
                ...(meta as Record<string, unknown> | null | undefined),
                resourceVersion: o.resourceVersion,
              },
            }
          : patch;
      return call(target, {
        method: 'PATCH',
        path,
        query: writeQuery,
        contentType: MERGE_PATCH,
        body,
      });
    },

    async deletePingSource(namespace: string, name: string, o: WriteOptions = {}): Promise<void> {
      const target: RequestTarget = { verb: 'delete', resource: PING_PLURAL, namespace, name };
      const path = pingPath(target, namespace, name);
      await call(target, {
        method: 'DELETE',
        path,
        body: {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          ...(o.resourceVersion !== undefined
            ? { preconditions: { resourceVersion: o.resourceVersion } }
            : {}),
        },
      });
    },

    async createEvent(event: KubeEvent, o: EventCallOptions = {}): Promise<KubeEvent> {
      const namespace = event?.metadata?.namespace;
      const name = event?.metadata?.name;
      const target: RequestTarget = { verb: 'create', resource: EVENTS.plural, namespace, name };
      const path = `${eventsPath(target, namespace, name)}`;
      return call(target, {
        method: 'POST',
        path: path.slice(0, path.lastIndexOf('/')),
        query: writeQuery,
        body: event,
        ...eventDeadline(target, o),
      });
    },

    async getEvent(namespace: string, name: string, o: EventCallOptions = {}): Promise<KubeEvent> {
      const target: RequestTarget = { verb: 'get', resource: EVENTS.plural, namespace, name };
      return call(target, {
        method: 'GET',
        path: eventsPath(target, namespace, name),
        ...eventDeadline(target, o),
      });
    },

    async patchEventSeries(
      namespace: string,
      name: string,
      series: EventSeries,
      o: WriteOptions & EventCallOptions,
    ): Promise<KubeEvent> {
      const target: RequestTarget = { verb: 'patch', resource: EVENTS.plural, namespace, name };
      const path = eventsPath(target, namespace, name);
      if (
        !isPlainObject(series) ||
        !Number.isInteger(series.count) ||
        series.count < 2 ||
        typeof series.lastObservedTime !== 'string'
      ) {
        throw new InvalidError(`${describeTarget(target)}: series must have count >= 2 and a time`);
      }
      return call(target, {
        method: 'PATCH',
        path,
        query: writeQuery,
        contentType: MERGE_PATCH,
        body: {
          ...(o.resourceVersion !== undefined
            ? { metadata: { resourceVersion: o.resourceVersion } }
            : {}),
          series: { count: series.count, lastObservedTime: series.lastObservedTime },
        },
        ...eventDeadline(target, o),
      });
    },
  };
}

function eventsPath(
  target: RequestTarget,
  namespace: string | undefined,
  name: string | undefined,
): string {
  checkName(target, 'namespace', namespace ?? '');
  checkName(target, 'name', name ?? '');
  return `${EVENTS.base}/namespaces/${namespace}/${EVENTS.plural}/${name}`;
}

function eventDeadline(target: RequestTarget, o: EventCallOptions): { timeoutMs?: number } {
  if (o.timeoutMs === undefined) return {};
  if (!Number.isFinite(o.timeoutMs) || o.timeoutMs <= 0) {
    throw new InvalidError(`${describeTarget(target)}: timeoutMs must be a positive number`);
  }
  return { timeoutMs: o.timeoutMs };
}

function agTarget(verb: string, ref: AgRef): RequestTarget {
  return { verb, resource: AG_PLURAL, namespace: ref.namespace, name: ref.name };
}

function agPath(target: RequestTarget, ref: AgRef): string {
  checkName(target, 'namespace', ref.namespace);
  checkName(target, 'name', ref.name);
  return `${AG.base}/namespaces/${ref.namespace}/${AG.plural}/${ref.name}`;
}

function psPath(target: RequestTarget, name: string): string {
  checkName(target, 'name', name);
  return `${PS.base}/${PS.plural}/${name}`;
}

function pingPath(target: RequestTarget, namespace: string, name: string): string {
  checkName(target, 'namespace', namespace);
  checkName(target, 'name', name);
  return `${PING.base}/namespaces/${namespace}/${PING.plural}/${name}`;
}

/**
 * resourceVersion - 1 as a decimal string, or null when it is not a positive decimal integer
 * above 1. etcd revisions are consecutive integers, so the state at rv - 1 is the object's
 * previous version.
 */
export function previousResourceVersion(resourceVersion: string): string | null {
  if (!/^[1-9][0-9]{0,30}$/.test(resourceVersion)) return null;
  const before = BigInt(resourceVersion) - 1n;
  return before >= 1n ? before.toString() : null;
}

function cachedQuery(o: ReadOptions): Record<string, string> {
  return o.cached === true ? { resourceVersion: '0' } : {};
}

function precondition(o: WriteOptions): { resourceVersion?: string } {
  return o.resourceVersion !== undefined ? { resourceVersion: o.resourceVersion } : {};
}

function statusPatch(conditions: Condition[], o: WriteOptions): Record<string, unknown> {
  return {
    ...(o.resourceVersion !== undefined
      ? { metadata: { resourceVersion: o.resourceVersion } }
      : {}),
    status: { conditions },
  };
}

// Bad input is refused before any request: nothing is sent, nothing changes.

function checkName(target: RequestTarget, field: string, value: string): void {
  if (!isDns1123Subdomain(value)) {
    throw new InvalidError(
      `${describeTarget(target)}: ${field} ${JSON.stringify(String(value).slice(0, 64))} is not a valid Kubernetes name`,
    );
  }
}

function checkAnnotations(target: RequestTarget, annotations: AnnotationPatch): void {
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

function checkConditions(target: RequestTarget, conditions: Condition[]): void {
  if (!Array.isArray(conditions) || !conditions.every(isPlainObject)) {
    throw new InvalidError(`${describeTarget(target)}: conditions must be an array of objects`);
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
