// Cluster-wide clean-up for the reliability suites. The reliability project
// runs after every other suite, so emptying the shared API server is safe.

import type * as k8s from '@kubernetes/client-node';
import { PS_API_GROUP, PS_PLURAL, type PackageSource } from '../../../shared/core/objects/types.js';
import { MERGE_PATCH, PS_VERSION, customObjects } from '../../support/apiserver.js';

const PS = { group: PS_API_GROUP, version: PS_VERSION, plural: PS_PLURAL };

/** Deletes every PackageSource, dropping the finalizers that would hold any of them first. */
export async function deleteAllPackageSources(kc: k8s.KubeConfig): Promise<void> {
  const api = customObjects(kc);
  const { items } = (await api.listClusterCustomObject(PS)) as { items: PackageSource[] };
  const held = items.filter(
    (ps) => (ps.metadata as { finalizers?: string[] } | undefined)?.finalizers?.length,
  );
  for (const ps of held) {
    const body = { metadata: { finalizers: null } };
    await api
      .patchClusterCustomObject({ ...PS, name: ps.metadata?.name ?? '', body }, MERGE_PATCH)
      .catch(() => undefined);
  }
  await api.deleteCollectionClusterCustomObject(PS);
}
