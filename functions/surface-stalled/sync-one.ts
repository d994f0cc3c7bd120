// Brings one AG's PackageSource Ready in step. In the common in-step case: two reads from the API
// server's cache and no write. A write carries the PackageSource's resourceVersion as precondition.

import {
  controllingPackageSource,
  desiredPackageSourceReady,
  packageSourceNeedsUpdate,
  replaceCondition,
} from '../../shared/core/index.js';
import type { AgRef, ArtifactGenerator, PackageSource } from '../../shared/core/types.js';
import { isKubeError } from '../../shared/kube/errors.js';
import type { Logger } from '../../shared/runtime/logger.js';
import type { SurfaceStalledDeps } from './deps.js';

export type SyncResult =
  | 'in-step'
  | 'updated'
  | 'observed'
  | 'no-owner'
  | 'no-packagesource'
  | 'left-alone'
  | 'gone'
  | 'conflict';

const MAX_ROUNDS = 4;

export async function syncOne(
  ref: AgRef,
  seenResourceVersion: string | undefined,
  deps: SurfaceStalledDeps,
  log: Logger,
): Promise<SyncResult> {
  for (let round = 0; round < MAX_ROUNDS; round++) {
    // Round 0 reads from the cache; after a conflict, read fresh.
    let ag: ArtifactGenerator;
    try {
      ag = await deps.kube.getArtifactGenerator(ref, { cached: round === 0 });
      // The cache lags the event that woke us: read fresh rather than act on an older AG.
      if (
        round === 0 &&
        seenResourceVersion !== undefined &&
        ag.metadata?.resourceVersion !== seenResourceVersion
      ) {
        ag = await deps.kube.getArtifactGenerator(ref);
      }
    } catch (e) {
      if (isKubeError(e, 'NotFound')) return 'gone';
      throw e;
    }
    const result = await syncWith(ag, undefined, round === 0, deps, log);
    if (result !== 'conflict') return result;
  }
  return 'conflict';
}

/**
 * Syncs the PackageSource of `ag`. `ps` may be given (a sweep listed it); otherwise it is read.
 * Returns 'conflict' when the precondition failed (the caller re-reads).
 */
export async function syncWith(
  ag: ArtifactGenerator,
  given: PackageSource | undefined,
  cached: boolean,
  deps: SurfaceStalledDeps,
  log: Logger,
): Promise<SyncResult> {
  const psName = controllingPackageSource(ag);
  if (psName === null) return 'no-owner';
  let ps = given;
  if (ps === undefined) {
    try {
      ps = await deps.kube.getPackageSource(psName, { cached });
    } catch (e) {
      if (isKubeError(e, 'NotFound')) return 'no-packagesource';
      throw e;
    }
  }
  const now = deps.clock.now();
  const desired = desiredPackageSourceReady(ag, ps, now, deps.config.recovery);
  if (desired === null) return 'left-alone';
  if (!packageSourceNeedsUpdate(ps, desired)) return 'in-step';
  const fields = { packageSource: psName, status: desired.status, reason: desired.reason };
  if (deps.config.recovery.mode === 'observe') {
    log.info({ ...fields, observe: true }, 'would update PackageSource Ready');
    return 'observed';
  }
  const rv = ps.metadata?.resourceVersion;
  try {
    await deps.kube.patchPackageSourceConditions(
      psName,
      replaceCondition(ps.status?.conditions, desired),
      rv !== undefined ? { resourceVersion: rv } : {},
    );
  } catch (e) {
    if (isKubeError(e, 'Conflict')) return 'conflict';
    if (isKubeError(e, 'NotFound')) return 'no-packagesource';
    throw e;
  }
  const message =
    desired.reason === 'SourceWatcherStalled'
      ? 'surfaced SourceWatcherStalled'
      : 'updated PackageSource Ready';
  log.info(fields, message);
  return 'updated';
}
