// The healthy AG the throughput and API-cost benches send events about: realistic (the fixture's
// eleven inventory entries), Ready=True now on its generation, optionally owned by a PackageSource
// of the same name, read back as the API server serves it.

import type { ArtifactGenerator } from '../../shared/core/types.js';
import { healthyStatus } from '../support/ag-states.js';
import type { RawKube } from '../support/raw-kube.js';

export async function createHealthyAg(
  raw: RawKube,
  namespace: string,
  name: string,
  { owned }: { owned: boolean },
): Promise<ArtifactGenerator> {
  const owner = owned
    ? { name, uid: (await raw.createPackageSource(name)).metadata?.uid ?? '' }
    : undefined;
  const created = await raw.createAg(namespace, name, owner);
  await raw.patchAgStatus(
    namespace,
    name,
    healthyStatus(Date.now(), created.metadata?.generation ?? 1, 'realistic'),
  );
  return raw.getAg(namespace, name);
}
