// Brings one AG's PackageSource Ready in step. For an AG event in the common in-step case: one read
// of the PackageSource from the API server's cache, checked against the event's AG, and no write.
// Otherwise the AG is read (from the cache, and fresh when the cache is older than the event) and
// the write carries the PackageSource's resourceVersion as precondition.

import {
  controllingPackageSource,
  decide,
  desiredPackageSourceReady,
  isDns1123Subdomain,
  packageSourceNeedsUpdate,
  precheckOwner,
  REASON_STALLED,
  readTracking,
  replaceCondition,
  resourceVersionAtLeast,
  stalledStep,
  stallSeconds,
  verifyOwner,
  type OwnerRefusal,
} from '../../shared/core/index.js';
import type { AgRef, ArtifactGenerator, PackageSource } from '../../shared/core/objects/types.js';
import { isKubeError } from '../../shared/kube/errors.js';
import { AGAIN, redecide } from '../../shared/kube/redecide.js';
import {
  createEventRecorder,
  type RecordEvent,
} from '../../shared/recovery/kube-event-recorder.js';
import type { Logger } from '../../shared/runtime/logger.js';
import { reportRefusedOwner } from '../../shared/recovery/owner-refusal.js';
import type { SurfaceStalledDeps } from './deps.js';
import type { SyncDecided } from './sync-turns.js';

export type SyncResult =
  | 'in-step'
  | 'updated'
  | 'observed'
  | 'no-owner'
  | 'owner-refused'
  | 'no-packagesource'
  | 'left-alone'
  | 'gone'
  | 'conflict';

export interface SyncOptions {
  /** Where the verdict Events go (one recorder per delivery); a new one when absent. */
  record?: RecordEvent;
  /** detect asked for the verdict (a `stalled` action): its Events are written when it holds. */
  verdictAsked?: boolean;
}

export interface SyncWithOptions extends SyncOptions {
  /** The PackageSource already read (a sweep listed it, or the event's); read when absent. */
  given: PackageSource | undefined;
  /** Read the PackageSource from the cache (a first round) rather than fresh. */
  cachedRead: boolean;
  record: RecordEvent;
}

export async function syncOne(
  ref: AgRef,
  seen: ArtifactGenerator | undefined,
  deps: SurfaceStalledDeps,
  log: Logger,
  { record = createEventRecorder(deps, log), verdictAsked = false }: SyncOptions = {},
): Promise<SyncDecided<SyncResult>> {
  const undecided = (result: SyncResult) => ({ result, agResourceVersion: undefined });
  const seenResourceVersion = seen?.metadata?.resourceVersion;
  // The event's AG is a hint (ADR 8): it may only save work, never cause a write. When the
  // PackageSource is already in step with it, nothing is read beyond the PackageSource; a write is
  // always decided on the AG as read from the API server (docs/adr/0044).
  let given: PackageSource | undefined;
  if (seen !== undefined) {
    const early = await inStepWithEvent(seen, deps);
    // Decided on the event's AG, a hint: it covers no other delivery (sync-turns.ts).
    if (early === 'in-step') return undecided('in-step');
    given = early;
  }
  return redecide<SyncDecided<SyncResult>>(
    async (round) => {
      // Round 0 reads from the cache; after a conflict, read fresh.
      let ag: ArtifactGenerator;
      try {
        ag = await deps.kube.getArtifactGenerator(ref, { cached: round === 0 });
        // The cache lags the event that woke us: read fresh rather than act on an older AG. A cached
        // AG as new as the event, or newer (a late or redelivered event), is used as it is: under a
        // storm most redeliveries carry an older version, and a second read would only add load.
        if (
          round === 0 &&
          seenResourceVersion !== undefined &&
          !resourceVersionAtLeast(ag.metadata?.resourceVersion, seenResourceVersion)
        ) {
          ag = await deps.kube.getArtifactGenerator(ref);
        }
      } catch (e) {
        if (isKubeError(e, 'NotFound')) return undecided('gone');
        throw e;
      }
      const ps =
        round === 0 && controllingPackageSource(ag) === psNameOf(given) ? given : undefined;
      const result = await syncWith(ag, deps, log, {
        given: ps,
        cachedRead: round === 0,
        record,
        verdictAsked,
      });
      if (result === 'conflict') return AGAIN;
      return { result, agResourceVersion: ag.metadata?.resourceVersion };
    },
    { exhausted: () => undecided('conflict') },
  );
}

/**
 * The cached PackageSource of the event's AG, or 'in-step' when it already shows what that AG
 * implies. Undefined when the event names no PackageSource owner or it is not found (the read path
 * then decides).
 */
async function inStepWithEvent(
  seen: ArtifactGenerator,
  deps: SurfaceStalledDeps,
): Promise<PackageSource | 'in-step' | undefined> {
  // The event's owner is unverified input: only a claim that could be genuine is read (a name
  // that is not a Kubernetes name is left to the read path, which takes the owner from the AG as
  // read), and only a verified owner can be found in step (docs/adr/0053).
  const pre = precheckOwner(seen, deps.config.packageSourceOwners);
  if (pre.kind !== 'read' || !isDns1123Subdomain(pre.claim.name)) return undefined;
  let ps: PackageSource;
  try {
    ps = await deps.kube.getPackageSource(pre.claim.name, { cached: true });
  } catch (e) {
    if (isKubeError(e, 'NotFound') || isKubeError(e, 'Invalid')) return undefined;
    throw e;
  }
  if (verifyOwner(seen, ps, deps.config.packageSourceOwners).kind !== 'verified') return ps;
  const desired = desiredPackageSourceReady(seen, ps, deps.clock.now(), deps.config.recovery);
  return desired !== null && !packageSourceNeedsUpdate(ps, desired) ? 'in-step' : ps;
}

function psNameOf(ps: PackageSource | undefined): string | null {
  return ps?.metadata?.name ?? null;
}

/**
 * Syncs the PackageSource of `ag`, `given` or read.
 * Returns 'conflict' when the precondition failed (the caller re-reads). The SourceWatcherStalled
 * Events are written when the verdict is surfaced (one regarding the AG, one regarding the
 * PackageSource, in `default`), and for an AG with no PackageSource owner, the AG's alone, when
 * detect asked for the verdict (`verdictAsked`) and it still holds.
 */
export async function syncWith(
  ag: ArtifactGenerator,
  deps: SurfaceStalledDeps,
  log: Logger,
  { given, cachedRead, record, verdictAsked = false }: SyncWithOptions,
): Promise<SyncResult> {
  const rule = deps.config.packageSourceOwners;
  const pre = precheckOwner(ag, rule);
  if (pre.kind === 'none') return unowned(ag, 'no-owner', verdictAsked, deps, log, record);
  if (pre.kind === 'refused') {
    return refusedOwner(ag, pre, verdictAsked, deps, log, record);
  }
  const psName = pre.claim.name;
  let ps = given;
  if (ps === undefined) {
    try {
      ps = await deps.kube.getPackageSource(psName, { cached: cachedRead });
    } catch (e) {
      if (isKubeError(e, 'NotFound')) return 'no-packagesource';
      throw e;
    }
  }
  const owner = verifyOwner(ag, ps, rule);
  if (owner.kind === 'refused') return refusedOwner(ag, owner, verdictAsked, deps, log, record);
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
  if (stalled)
    deps.metrics?.verdict(
      { namespace: ag.metadata?.namespace ?? '', name: ag.metadata?.name ?? '' },
      stallSeconds(readTracking(ag, now, deps.config.recovery), now),
    );
  if (stalled) await record(ag, stalledStep(ag, ps, now, deps.config.recovery));
  return 'updated';
}

/**
 * An AG that no PackageSource owns (none claimed, or the claim refused): nothing is mirrored; the
 * verdict, when detect asked for it and it still holds, is the AG's Event alone.
 */
async function unowned(
  ag: ArtifactGenerator,
  result: 'no-owner' | 'owner-refused',
  verdictAsked: boolean,
  deps: SurfaceStalledDeps,
  log: Logger,
  record: RecordEvent,
): Promise<SyncResult> {
  const now = deps.clock.now();
  const cfg = deps.config.recovery;
  if (verdictAsked && cfg.mode === 'enforce' && decide(ag, now, cfg).kind === 'give-up') {
    log.info({ packageSource: null }, 'verdict SourceWatcherStalled (no PackageSource)');
    await record(ag, stalledStep(ag, null, now, cfg));
  }
  return result;
}

/** A claimed owner that is not the AG's: said (log, Event), then a plain Flux AG (docs/adr/0053). */
async function refusedOwner(
  ag: ArtifactGenerator,
  refusal: OwnerRefusal,
  verdictAsked: boolean,
  deps: SurfaceStalledDeps,
  log: Logger,
  record: RecordEvent,
): Promise<SyncResult> {
  await reportRefusedOwner(ag, refusal, log, record, deps.metrics);
  return unowned(ag, 'owner-refused', verdictAsked, deps, log, record);
}
