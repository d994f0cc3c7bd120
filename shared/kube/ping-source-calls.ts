// The KubePort's PingSource calls (the follow-up alarm): get, create, merge patch and delete with
// an optional resourceVersion precondition.

import { PING_API_VERSION, PING_KIND, PING_PLURAL } from '../core/objects/types.js';
import { InvalidError } from './errors.js';
import { describeTarget, type RequestTarget } from './errors-map.js';
import type { KubePort, PingSource } from './port.js';
import { checkName, isPlainObject, MERGE_PATCH, type ResourceContext } from './resource-context.js';

const PING = { base: `/apis/${PING_API_VERSION}`, plural: PING_PLURAL };

export type PingSourceCalls = Pick<
  KubePort,
  'getPingSource' | 'createPingSource' | 'patchPingSource' | 'deletePingSource'
>;

export function pingSourceCalls(ctx: ResourceContext): PingSourceCalls {
  const { call, writeQuery } = ctx;
  return {
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

    async patchPingSource(namespace, name, patch, o = {}): Promise<PingSource> {
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

    async deletePingSource(namespace, name, o = {}): Promise<void> {
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
  };
}

function pingPath(target: RequestTarget, namespace: string, name: string): string {
  checkName(target, 'namespace', namespace);
  checkName(target, 'name', name);
  return `${PING.base}/namespaces/${namespace}/${PING.plural}/${name}`;
}
