// AG status shapes the tests and benches put on the real API server: stuck (the fluxcd/pkg#934
// signature), healthy, honestly failing, and our own marker. Their conditions come from the one
// vocabulary, ./conditions.ts.

import type * as k8s from '@kubernetes/client-node';
import type {
  ArtifactGenerator,
  ArtifactGeneratorStatus,
} from '../../shared/core/objects/types.js';
import { AG_API_GROUP, AG_PLURAL } from '../../shared/core/objects/types.js';
import { loadRealisticAg } from './realistic-ag.js';
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
import { progressing, reconciling, succeeded } from './conditions.js';

export const INVENTORY = [
  {
    name: 'artifact',
    namespace: 'cozy-system',
    digest: 'sha256:0123456789abcdef',
    filename: 'artifact.tar.gz',
  },
];
export const DIGEST = 'sha256:fedcba9876543210';

/**
 * How much of source-watcher's output a status carries: the tests' one artifact (`minimal`), the
 * realistic fixture's eleven inventory entries (`realistic`, ./fixtures/realistic-ag.json), or its
 * first one (`compact`). The fixture shapes carry only the Ready condition, worded as source-watcher does.
 */
export type AgShape = 'minimal' | 'realistic' | 'compact';

function outputsOf(shape: AgShape): Omit<ArtifactGeneratorStatus, 'conditions'> {
  if (shape === 'minimal') return { inventory: INVENTORY, observedSourcesDigest: DIGEST };
  const fixture = loadRealisticAg();
  const inventory = fixture.status?.inventory ?? [];
  return {
    inventory: shape === 'compact' ? inventory.slice(0, 1) : inventory,
    ...(fixture.status?.observedSourcesDigest !== undefined
      ? { observedSourcesDigest: fixture.status.observedSourcesDigest }
      : {}),
  };
}

/** The fluxcd/pkg#934 state: outputs saved, Ready left Unknown/Progressing since `since`. */
export function stuckStatus(
  since: number,
  generation = 1,
  shape: AgShape = 'minimal',
): ArtifactGeneratorStatus {
  const readyNow = progressing(since, generation);
  return {
    ...outputsOf(shape),
    conditions: shape === 'minimal' ? [reconciling(since, generation), readyNow] : [readyNow],
  };
}

/** Ready=True on `generation`, outputs saved. */
export function healthyStatus(
  at: number,
  generation = 1,
  shape: AgShape = 'minimal',
): ArtifactGeneratorStatus {
  const outputs = outputsOf(shape);
  return {
    ...outputs,
    conditions: [succeeded(at, generation, outputs.inventory?.length ?? 0)],
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

/** Outputs of a later build: another artifact digest and another sources digest. */
export const INVENTORY_2 = [{ ...INVENTORY[0]!, digest: 'sha256:2222222222222222' }];
export const DIGEST_2 = 'sha256:2222222222222222fedcba';

export interface BuildObjects {
  /** Every version of the AG, in the order written (created, healthy, in progress, ...). */
  versions: ArtifactGenerator[];
  /** The last version. */
  last: ArtifactGenerator;
}

/**
 * An AG rebuilt the way source-watcher v2.1.0 writes a build (test/recorded/source-watcher-v2.1.0): the in-progress
 * conditions (Ready Unknown, old outputs), then the verdict (Ready=True), then the rest of status
 * (new inventory and digest). `lose: true` loses the verdict: the fluxcd/pkg#934 stall.
 */
export async function rebuildAg(
  kc: k8s.KubeConfig,
  opts: { at: number; lose: boolean; fixture?: ArtifactGeneratorFixture },
): Promise<BuildObjects> {
  const created = await createArtifactGenerator(makeArtifactGenerator(opts.fixture ?? {}), kc);
  const ref = agRefOf(created);
  const versions: ArtifactGenerator[] = [created];
  const write = async (status: ArtifactGeneratorStatus): Promise<void> => {
    versions.push(await writeArtifactGeneratorStatus(ref, status, kc));
  };
  await write(healthyStatus(opts.at - 3_600_000));
  await write({ conditions: stuckStatus(opts.at).conditions ?? [] });
  if (!opts.lose) {
    await write({ conditions: [succeeded(opts.at + 1_000)] });
  }
  await write({ inventory: INVENTORY_2, observedSourcesDigest: DIGEST_2 });
  return { versions, last: versions[versions.length - 1]! };
}
