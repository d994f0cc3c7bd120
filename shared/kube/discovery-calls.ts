// The KubePort's discovery read: the resources one API group version serves
// (GET /apis/GROUP/VERSION), for the start-up prerequisite check. Every authenticated identity may
// read discovery (the system:discovery ClusterRole), so this needs no RBAC of the install.

import type { KubePort } from './port.js';
import { checkName, type ResourceContext } from './resource-context.js';
import type { RequestTarget } from './errors-map.js';

export type DiscoveryCalls = Pick<KubePort, 'listServedResources'>;

interface ApiResourceList {
  resources?: { name?: unknown }[];
}

export function discoveryCalls(ctx: ResourceContext): DiscoveryCalls {
  return {
    async listServedResources(group: string, version: string): Promise<string[]> {
      const target: RequestTarget = {
        verb: 'get',
        resource: 'discovery',
        name: `${group}/${version}`,
      };
      checkName(target, 'group', group);
      checkName(target, 'version', version);
      const list = await ctx.call<ApiResourceList>(target, {
        method: 'GET',
        path: `/apis/${group}/${version}`,
      });
      return (list.resources ?? [])
        .map((r) => r.name)
        .filter((n): n is string => typeof n === 'string');
    },
  };
}
