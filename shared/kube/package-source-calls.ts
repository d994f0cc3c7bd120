// The KubePort's PackageSource calls (cluster-scoped): get, list, and a merge patch of
// status.conditions.

import { PS_API_VERSION, PS_PLURAL, type PackageSource } from '../core/objects/types.js';
import type { RequestTarget } from './errors-map.js';
import type { KubePort, ListPage, ReadOptions } from './port.js';
import {
  cachedQuery,
  checkConditions,
  checkName,
  MERGE_PATCH,
  statusPatch,
  type ResourceContext,
} from './resource-context.js';

const PS = { base: `/apis/${PS_API_VERSION}`, plural: PS_PLURAL };

export type PackageSourceCalls = Pick<
  KubePort,
  'getPackageSource' | 'listPackageSources' | 'patchPackageSourceConditions'
>;

export function packageSourceCalls(ctx: ResourceContext): PackageSourceCalls {
  const { call, writeQuery } = ctx;
  return {
    async getPackageSource(name: string, o: ReadOptions = {}): Promise<PackageSource> {
      const target: RequestTarget = { verb: 'get', resource: PS_PLURAL, name };
      return call(target, { method: 'GET', path: psPath(target, name), query: cachedQuery(o) });
    },

    async listPackageSources(o = {}): Promise<ListPage<PackageSource>> {
      const target: RequestTarget = { verb: 'list', resource: PS_PLURAL };
      return ctx.list(target, `${PS.base}/${PS.plural}`, o);
    },

    async patchPackageSourceConditions(name, conditions, o = {}): Promise<PackageSource> {
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
  };
}

function psPath(target: RequestTarget, name: string): string {
  checkName(target, 'name', name);
  return `${PS.base}/${PS.plural}/${name}`;
}
