// The PackageSource Ready condition that tells the truth about its AG (docs/design.md §3, "The PackageSource's Ready").

import { backoffFor } from '../decision/backoff.js';
import type { RecoveryConfig } from '../config/recovery-config.js';
import {
  capMessage,
  findCondition,
  isValidReason,
  READY,
  readyOf,
  REASON_AWAITING,
  REASON_FORCED,
  REASON_STALLED,
  sameCondition,
} from '../objects/conditions.js';
import { decide, type Decision } from '../decision/decide.js';
import { isFiniteNumber, isPlainObject } from '../codecs/plain.js';
import { formatTimeSeconds, parseTime } from '../codecs/time.js';
import { readTracking } from '../decision/tracking.js';
import type { ArtifactGenerator, Condition, PackageSource } from '../objects/types.js';

/** Reason used when the AG's Ready has no reason the PackageSource schema would accept. */
export const REASON_COPIED_FALLBACK = 'ArtifactGeneratorReady';
/** PackageSource Ready while the AG has no (usable) Ready condition, as the reference writes. */
export const REASON_AG_NOT_READY = 'ArtifactGeneratorNotReady';
export const ISSUE = 'fluxcd/pkg#934';

const CONDITION_STATUSES = new Set(['True', 'False', 'Unknown']);

/**
 * The PackageSource the AG's controller ownerReference names: its name and uid ('' when the
 * reference carries none). A claim, not a fact: anyone who may create the AG wrote it; see
 * owner.ts for what makes it the AG's owner (docs/adr/0053).
 */
export function controllingPackageSourceRef(
  ag: ArtifactGenerator,
): { name: string; uid: string } | null {
  const refs: unknown = ag.metadata?.ownerReferences;
  if (!Array.isArray(refs)) return null;
  for (const ref of refs as unknown[]) {
    if (
      isPlainObject(ref) &&
      ref['controller'] === true &&
      ref['kind'] === 'PackageSource' &&
      typeof ref['apiVersion'] === 'string' &&
      ref['apiVersion'].startsWith('cozystack.io/') &&
      typeof ref['name'] === 'string' &&
      ref['name'] !== ''
    ) {
      return { name: ref['name'], uid: typeof ref['uid'] === 'string' ? ref['uid'] : '' };
    }
  }
  return null;
}

/** The name of the PackageSource the AG's controller ownerReference names (unverified). */
export function controllingPackageSource(ag: ArtifactGenerator): string | null {
  return controllingPackageSourceRef(ag)?.name ?? null;
}

/**
 * A PackageSource being deleted (deletionTimestamp set, held by a finalizer): we write nothing to
 * it and force nothing on its AG, as the reference driver.
 */
export function isPackageSourceDeleting(ps: PackageSource): boolean {
  const ts: unknown = ps.metadata?.deletionTimestamp;
  return ts !== undefined && ts !== null && ts !== '';
}

/**
 * The Ready condition the PackageSource should carry for this AG, or null when it is left alone
 * (the AG or the PackageSource is being deleted, or the AG has no name). Deterministic in (ag, ps, now, cfg); `now` only
 * stamps the lastTransitionTime of a synthetic condition whose status changes.
 */
export function desiredPackageSourceReady(
  ag: ArtifactGenerator,
  ps: PackageSource,
  now: number,
  cfg: RecoveryConfig,
): Condition | null {
  if (isPackageSourceDeleting(ps)) return null;
  const decision = decide(ag, now, cfg);
  if (decision.kind === 'ignore') return null;
  const current = findCondition(ps.status?.conditions, READY);
  const body = conditionBody(ag, decision, now, cfg);
  const out: Condition = {
    type: READY,
    status: body.status,
    reason: body.reason === REASON_FORCED ? REASON_AWAITING : body.reason,
    message: capMessage(body.message),
    lastTransitionTime:
      body.lastTransitionTime ??
      (current?.status === body.status && parseTime(current.lastTransitionTime) !== null
        ? (current.lastTransitionTime as string)
        : formatTimeSeconds(now)),
  };
  const generation = ps.metadata?.generation;
  if (isFiniteNumber(generation)) out.observedGeneration = generation;
  return out;
}

/** The PackageSource's Ready differs from `desired`. */
export function packageSourceNeedsUpdate(ps: PackageSource, desired: Condition): boolean {
  return !sameCondition(findCondition(ps.status?.conditions, READY), desired);
}

interface Body {
  status: string;
  reason: string;
  message: string;
  /** Set only when copied from the AG; synthetic conditions get theirs from the PackageSource. */
  lastTransitionTime?: string;
}

function conditionBody(
  ag: ArtifactGenerator,
  decision: Exclude<Decision, { kind: 'ignore' }>,
  now: number,
  cfg: RecoveryConfig,
): Body {
  const agName = `${ag.metadata?.namespace ?? ''}/${ag.metadata?.name ?? ''}`;
  const max = cfg.maxAttempts;
  switch (decision.kind) {
    case 'healthy':
      return copyThrough(ag, agName);
    case 'give-up':
      return {
        status: 'False',
        reason: REASON_STALLED,
        message:
          `source-watcher did not rebuild ArtifactGenerator ${agName} after ` +
          `${decision.attempts} force-drift attempt(s); its Ready condition was lost (${ISSUE}). ` +
          `Restart source-watcher (kubectl -n flux-system rollout restart deployment/source-watcher) ` +
          `and inspect the ArtifactGenerator (kubectl -n ${ag.metadata?.namespace ?? ''} ` +
          `describe artifactgenerator ${ag.metadata?.name ?? ''})`,
      };
    case 'force':
    case 'resume':
    case 'wait': {
      const { attempts, lastRecoveryAt } = readTracking(ag, now, cfg);
      return {
        status: 'Unknown',
        reason: REASON_AWAITING,
        message: `force-drift ${attempts}/${max}: ${awaitingText(agName, attempts, lastRecoveryAt, cfg)}`,
      };
    }
  }
}

/** Text that depends only on the tracking annotations, so re-evaluation gives the same words. */
function awaitingText(
  agName: string,
  attempts: number,
  lastRecoveryAt: number | null,
  cfg: RecoveryConfig,
): string {
  const observe = cfg.mode === 'observe' ? ' (observe mode: no force is written)' : '';
  if (attempts === 0) {
    return (
      `ArtifactGenerator ${agName} kept its artifacts but lost its Ready condition (${ISSUE}); ` +
      `the first attempt to force a source-watcher rebuild is pending${observe}`
    );
  }
  const head = `waiting for source-watcher to rebuild ArtifactGenerator ${agName} (${ISSUE})`;
  if (lastRecoveryAt === null) {
    return `${head}; the last attempt's time is unknown, so the next step is due now${observe}`;
  }
  const due = formatTimeSeconds(
    Math.ceil((lastRecoveryAt + backoffFor(attempts, cfg)) / 1000) * 1000,
  );
  if (attempts >= cfg.maxAttempts) {
    return `${head}; that was the last attempt, the verdict is due at ${due}${observe}`;
  }
  return `${head}; the next attempt is due at ${due}${observe}`;
}

function copyThrough(ag: ArtifactGenerator, agName: string): Body {
  const ready = readyOf(ag);
  if (ready === undefined || ready.status === undefined || !CONDITION_STATUSES.has(ready.status)) {
    return {
      status: 'Unknown',
      reason: REASON_AG_NOT_READY,
      message:
        `ArtifactGenerator ${agName} has no Ready condition yet; ` +
        `waiting for source-watcher to report one`,
    };
  }
  if (ready.reason === REASON_FORCED) {
    // Only possible with the driver off: our marker is left over; never show it.
    return {
      status: 'Unknown',
      reason: REASON_AWAITING,
      message:
        `ArtifactGenerator ${agName} still carries the force-drift marker; waiting for ` +
        `source-watcher to rebuild it (${ISSUE}); the recovery driver is off`,
    };
  }
  const body: Body = {
    status: ready.status,
    reason: isValidReason(ready.reason) ? ready.reason : REASON_COPIED_FALLBACK,
    message: ready.message ?? '',
  };
  if (parseTime(ready.lastTransitionTime) !== null) {
    body.lastTransitionTime = ready.lastTransitionTime as string;
  }
  return body;
}
