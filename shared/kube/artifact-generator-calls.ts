// The KubePort's ArtifactGenerator calls: get, list, the version before a given one (one LIST at
// resourceVersion - 1, docs/adr/0014-early-detection.md), and merge patches of the annotations
// and of status.conditions.

import {
  AG_API_VERSION,
  AG_PLURAL,
  type AgRef,
  type ArtifactGenerator,
} from '../core/objects/types.js';
import { isKubeError } from './errors.js';
import { toKubeError, type RequestTarget } from './errors-map.js';
import type { KubePort, ListOptions, ListPage, PreviousVersion, ReadOptions } from './port.js';
import {
  cachedQuery,
  checkAnnotations,
  checkConditions,
  checkName,
  MERGE_PATCH,
  precondition,
  statusPatch,
  type ResourceContext,
} from './resource-context.js';

const AG = { base: `/apis/${AG_API_VERSION}`, plural: AG_PLURAL };

export type ArtifactGeneratorCalls = Pick<
  KubePort,
  | 'getArtifactGenerator'
  | 'listArtifactGenerators'
  | 'getArtifactGeneratorBefore'
  | 'patchArtifactGeneratorAnnotations'
  | 'patchArtifactGeneratorConditions'
>;

export function artifactGeneratorCalls(ctx: ResourceContext): ArtifactGeneratorCalls {
  const { call, writeQuery } = ctx;
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
        return ctx.list(target, `${AG.base}/namespaces/${o.namespace}/${AG.plural}`, o);
      }
      return ctx.list(target, `${AG.base}/${AG.plural}`, o);
    },

    async getArtifactGeneratorBefore(ref, resourceVersion): Promise<PreviousVersion> {
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

    async patchArtifactGeneratorAnnotations(ref, annotations, o = {}): Promise<ArtifactGenerator> {
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

    async patchArtifactGeneratorConditions(ref, conditions, o = {}): Promise<ArtifactGenerator> {
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
  };
}

function agTarget(verb: string, ref: AgRef): RequestTarget {
  return { verb, resource: AG_PLURAL, namespace: ref.namespace, name: ref.name };
}

function agPath(target: RequestTarget, ref: AgRef): string {
  checkName(target, 'namespace', ref.namespace);
  checkName(target, 'name', ref.name);
  return `${AG.base}/namespaces/${ref.namespace}/${AG.plural}/${ref.name}`;
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
