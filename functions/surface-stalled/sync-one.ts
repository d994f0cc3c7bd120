// Brings one AG's PackageSource Ready in step. In the common in-step case: two reads from the API
// server's cache and no write. A write carries the PackageSource's resourceVersion as precondition.

import {
  controllingPackageSource,
  decide,
  desiredPackageSourceReady,
  packageSourceNeedsUpdate,
  REASON_STALLED,
  replaceCondition,
  stalledStep,
} from '../../shared/core/index.js';
import type { AgRef, ArtifactGenerator, PackageSource } from '../../shared/core/types.js';
import { isKubeError } from '../../shared/kube/errors.js';
import { createEventRecorder, type RecordEvent } from '../../shared/runtime/event-recorder.js';
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
  record: RecordEvent = createEventRecorder(deps, log),
  verdictAsked = false,
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
    const result = await syncWith(ag, undefined, round === 0, deps, log, record, verdictAsked);
    if (result !== 'conflict') return result;
  }
  return 'conflict';
}

/**
 * Syncs the PackageSource of `ag`. `ps` may be given (a sweep listed it); otherwise it is read.
 * Returns 'conflict' when the precondition failed (the caller re-reads). The SourceWatcherStalled
 * Events are written when the verdict is surfaced (one regarding the AG, one regarding the
 * PackageSource, in `default`), and for an AG with no PackageSource owner, the AG's alone, when
 * detect asked for the verdict (`verdictAsked`) and it still holds.
 */
export async function syncWith(
  ag: ArtifactGenerator,
  given: PackageSource | undefined,
  cached: boolean,
  deps: SurfaceStalledDeps,
  log: Logger,
  record: RecordEvent,
  verdictAsked = false,
): Promise<SyncResult> {
  const psName = controllingPackageSource(ag);
  if (psName === null) {
    const now = deps.clock.now();
    const cfg = deps.config.recovery;
    if (verdictAsked && cfg.mode === 'enforce' && decide(ag, now, cfg).kind === 'give-up') {
      log.info({ packageSource: null }, 'verdict SourceWatcherStalled (no PackageSource)');
      await record(ag, stalledStep(ag, null, now, cfg));
    }
    return 'no-owner';
  }
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
  const stalled = desired.reason === REASON_STALLED;
  log.info(fields, stalled ? 'surfaced SourceWatcherStalled' : 'updated PackageSource Ready');
  if (stalled) await record(ag, stalledStep(ag, ps, now, deps.config.recovery));
  return 'updated';
}
