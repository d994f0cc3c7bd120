// AG status shapes the tests put on the real API server: stuck (the fluxcd/pkg#934 signature),
// healthy, honestly failing, and our own marker.

import type * as k8s from '@kubernetes/client-node';
import { formatTimeSeconds } from '../../shared/core/time.js';
import type {
  ArtifactGenerator,
  ArtifactGeneratorStatus,
  Condition,
} from '../../shared/core/types.js';
import { AG_API_GROUP, AG_PLURAL } from '../../shared/core/types.js';
import {
  AG_VERSION,
  MERGE_PATCH,
  agRefOf,
  customObjects,
  deleteArtifactGenerator,
  createArtifactGenerator,
  makeArtifactGenerator,
  writeArtifactGeneratorStatus,
  type ArtifactGeneratorFixture,
} from './apiserver.js';

export const INVENTORY = [
  {
    name: 'artifact',
    namespace: 'cozy-system',
    digest: 'sha256:0123456789abcdef',
    filename: 'artifact.tar.gz',
  },
];
export const DIGEST = 'sha256:fedcba9876543210';

export function ready(
  status: 'True' | 'False' | 'Unknown',
  reason: string,
  at: number,
  generation = 1,
): Condition {
  return {
    type: 'Ready',
    status,
    reason,
    message: `${reason} message`,
    lastTransitionTime: formatTimeSeconds(at),
    observedGeneration: generation,
  };
}

/** Another condition that must survive every write of ours untouched. */
export function reconciling(at: number, generation = 1): Condition {
  return {
    type: 'Reconciling',
    status: 'True',
    reason: 'Progressing',
    message: 'Reconciliation in progress',
    lastTransitionTime: formatTimeSeconds(at),
    observedGeneration: generation,
  };
}

export function stuckStatus(since: number, generation = 1): ArtifactGeneratorStatus {
  return {
    inventory: INVENTORY,
    observedSourcesDigest: DIGEST,
    conditions: [
      reconciling(since, generation),
      ready('Unknown', 'Progressing', since, generation),
    ],
  };
}

export function healthyStatus(at: number, generation = 1): ArtifactGeneratorStatus {
  return {
    inventory: INVENTORY,
    observedSourcesDigest: DIGEST,
    conditions: [ready('True', 'Succeeded', at, generation)],
  };
}

/** Creates an AG and gives it `status` through the status subresource. */
export async function createAgWithStatus(
  kc: k8s.KubeConfig,
  status: ArtifactGeneratorStatus,
  fixture: ArtifactGeneratorFixture = {},
): Promise<ArtifactGenerator> {
  const created = await createArtifactGenerator(makeArtifactGenerator(fixture), kc);
  return writeArtifactGeneratorStatus(agRefOf(created), status, kc);
}

/** Deletes every AG in the cluster (finalizers dropped first): sweeps see all namespaces. */
export async function deleteAllArtifactGenerators(kc: k8s.KubeConfig): Promise<void> {
  const api = customObjects(kc);
  const list = (await api.listClusterCustomObject({
    group: AG_API_GROUP,
    version: AG_VERSION,
    plural: AG_PLURAL,
  })) as { items: ArtifactGenerator[] };
  await Promise.all(
    list.items.map(async (ag) => {
      const ref = agRefOf(ag);
      if ((ag.metadata as { finalizers?: string[] } | undefined)?.finalizers?.length) {
        await api
          .patchNamespacedCustomObject(
            {
              group: AG_API_GROUP,
              version: AG_VERSION,
              plural: AG_PLURAL,
              ...ref,
              body: { metadata: { finalizers: null } },
            },
            MERGE_PATCH,
          )
          .catch(() => undefined);
      }
      await deleteArtifactGenerator(ref, kc);
    }),
  );
}
