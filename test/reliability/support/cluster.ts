// Cluster-wide clean-up for the reliability suites. The reliability project
// runs after every other suite, so emptying the shared API server is safe.

import type * as k8s from '@kubernetes/client-node';
import { PS_API_GROUP, PS_PLURAL, type PackageSource } from '../../../shared/core/types.js';
import {
  MERGE_PATCH,
  PS_VERSION,
  customObjects,
  deletePackageSource,
} from '../../support/apiserver.js';

export async function deleteAllPackageSources(kc: k8s.KubeConfig): Promise<void> {
  const api = customObjects(kc);
  const list = (await api.listClusterCustomObject({
    group: PS_API_GROUP,
    version: PS_VERSION,
    plural: PS_PLURAL,
  })) as { items: PackageSource[] };
  await Promise.all(
    list.items.map(async (ps) => {
      const name = ps.metadata?.name ?? '';
      if ((ps.metadata as { finalizers?: string[] } | undefined)?.finalizers?.length) {
        await api
          .patchClusterCustomObject(
            {
              group: PS_API_GROUP,
              version: PS_VERSION,
              plural: PS_PLURAL,
              name,
              body: { metadata: { finalizers: null } },
            },
            MERGE_PATCH,
          )
          .catch(() => undefined);
      }
      await deletePackageSource(name, kc);
    }),
  );
}
