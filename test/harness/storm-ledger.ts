// What an operator reads after the storm (issue 33), against what happened: the recovery steps
// the world recorded on each AG (forces made: claimed in its annotations and their rebuild asked;
// recoveries after a claim, the verdict) against the Kubernetes Events in the API at the end of the run; and every
// "follow-up not armed" warning of detect against a later arm of the same AG or a resync sweep
// done within the resync period and a margin. Also the event path's own troubles (the adapters'
// re-lists and backoffs). The strings are docs/design.md's, written out (as system/progress.ts
// does), not imported from shared/core.

import * as k8s from '@kubernetes/client-node';
import type { StormFleet } from './storm-fleet.js';
import type { System } from './system.js';
import type { LogRecord } from './system/log-capture.js';

const REASON_FORCED = 'SourceWatcherRecoveryForced';
const REASON_RECOVERED = 'SourceWatcherRecovered';
const REASON_STALLED = 'SourceWatcherStalled';
const ACTION_FORCE = 'Force';
const ACTION_RESUME = 'ResumeForce';

export const EVENT_NOT_WRITTEN = 'could not write Kubernetes Event';
export const FOLLOW_UP_NOT_ARMED = 'follow-up not armed';
export const FOLLOW_UP_ARMED = 'follow-up armed';
export const SWEEP_DONE = 'sweep done';
export const OWED_EVENT_DROPPED = 'owed Kubernetes Event dropped';
/** The messages the ledgers read (a system's `logKeep`). */
export const LEDGER_LOG_MESSAGES = [
  EVENT_NOT_WRITTEN,
  OWED_EVENT_DROPPED,
  FOLLOW_UP_NOT_ARMED,
  FOLLOW_UP_ARMED,
  SWEEP_DONE,
] as const;
/** knative/base/pingsource-resync.yaml: every 5 minutes; one more minute of margin. */
export const FOLLOW_UP_COVER_MS = 6 * 60_000;

export interface EventLedger {
  /**
   * Recovery steps the world saw: forces made (claimed and their rebuild asked: `requestedAt`
   * stamped with the claim), recoveries after a claim, verdicts.
   */
  readonly steps: number;
  /**
   * Claims whose rebuild was never asked (superseded: the AG healed or another claim came first);
   * no force happened, so no force Event is due (the recovery's Event reports the cycle).
   */
  readonly unfinishedClaims: number;
  /** Of them, those with no Kubernetes Event of theirs in the API at the end. */
  readonly stepsWithoutEvent: number;
  /** Which: `ns/name step` (a force by its attempt). */
  readonly missing: string[];
  /** The functions' "could not write Kubernetes Event" warnings. */
  readonly notWrittenWarnings: number;
  /** Owed Events given up ("owed Kubernetes Event dropped"), by why (expired, capacity). */
  readonly owedDropped: Record<string, number>;
}

interface EventLike {
  reason?: string;
  action?: string;
  note?: string;
  regarding?: { kind?: string; name?: string; namespace?: string };
}

/** Counts the steps of the fleet's AGs without their Event (Events read as the admin, directly). */
export async function eventLedger(
  system: System,
  fleet: StormFleet,
  namespace: string,
): Promise<EventLedger> {
  const api = system.kubeConfig.makeApiClient(k8s.EventsV1Api);
  const items: EventLike[] = [];
  let cont: string | undefined;
  do {
    const page = await api.listNamespacedEvent({
      namespace,
      limit: 500,
      ...(cont ? { _continue: cont } : {}),
    });
    items.push(...(page.items as EventLike[]));
    cont = page.metadata?._continue || undefined;
  } while (cont);
  const byAg = new Map<string, EventLike[]>();
  for (const e of items) {
    if (e.regarding?.kind !== 'ArtifactGenerator') continue;
    const key = `${e.regarding.namespace ?? ''}/${e.regarding.name ?? ''}`;
    byAg.set(key, [...(byAg.get(key) ?? []), e]);
  }
  let steps = 0;
  let unfinishedClaims = 0;
  const missing: string[] = [];
  for (const m of fleet.members) {
    const p = system.progress.of(m.key);
    const events = byAg.get(m.key) ?? [];
    const count = (reason: string, action?: string, attempt?: number): number =>
      events.filter(
        (e) =>
          e.reason === reason &&
          (action === undefined || e.action === action) &&
          (attempt === undefined || e.note?.startsWith(`attempt ${attempt}/`) === true),
      ).length;
    // Forces, by attempt: a claim's Event says "attempt k/N" (Force, or ResumeForce when a
    // redelivery finished it); two cycles may both claim attempt 1.
    const claims = new Map<number, number>();
    for (const f of p.forces) {
      if (f.bumpedAt === null) unfinishedClaims += 1;
      else claims.set(f.attempt, (claims.get(f.attempt) ?? 0) + 1);
    }
    for (const [attempt, n] of claims) {
      steps += n;
      const written = Math.max(
        count(REASON_FORCED, ACTION_FORCE, attempt),
        count(REASON_FORCED, ACTION_RESUME, attempt),
      );
      for (let i = written; i < n; i++) missing.push(`${m.key} force ${attempt}`);
    }
    // A recovery clears the tracking of a cycle that had a force.
    let recoveredSteps = 0;
    let since = -Infinity;
    for (const r of p.recoveries) {
      if (p.forces.some((f) => f.claimedAt > since && f.claimedAt <= r)) recoveredSteps += 1;
      since = r;
    }
    steps += recoveredSteps;
    for (let i = count(REASON_RECOVERED); i < recoveredSteps; i++) {
      missing.push(`${m.key} recovered`);
    }
    if (p.stalledAt !== null) {
      steps += 1;
      if (count(REASON_STALLED) === 0) missing.push(`${m.key} stalled`);
    }
  }
  const owedDropped: Record<string, number> = {};
  for (const r of system.logs.find(OWED_EVENT_DROPPED)) {
    const why = typeof r['why'] === 'string' ? r['why'] : 'unknown';
    owedDropped[why] = (owedDropped[why] ?? 0) + 1;
  }
  return {
    steps,
    unfinishedClaims,
    stepsWithoutEvent: missing.length,
    missing,
    notWrittenWarnings: system.logs.find(EVENT_NOT_WRITTEN).length,
    owedDropped,
  };
}

export interface FollowUpLedger {
  readonly notArmed: number;
  /** Not followed, within FOLLOW_UP_COVER_MS, by an arm for the same AG or a sweep done. */
  readonly uncovered: number;
  readonly uncoveredAt: string[];
}

const agOf = (r: LogRecord): string | null =>
  typeof r['namespace'] === 'string' && typeof r['name'] === 'string'
    ? `${r['namespace']}/${r['name']}`
    : null;

/**
 * detect's "follow-up not armed" warnings, each covered by a later "follow-up armed" of the same
 * AG (a sweep's warning: of any) or a "sweep done" (the resync re-arms for the earliest due),
 * within FOLLOW_UP_COVER_MS of virtual time. Needs the records' `virtualAt` (system.logs).
 */
export function followUpLedger(system: System): FollowUpLedger {
  const records = system.logs.records.filter((r) => r.function === 'detect');
  const uncoveredAt: string[] = [];
  let notArmed = 0;
  records.forEach((w, i) => {
    if (w.msg !== FOLLOW_UP_NOT_ARMED) return;
    notArmed += 1;
    const at = w.virtualAt ?? 0;
    const ag = agOf(w);
    const covered = records
      .slice(i + 1)
      .some(
        (c) =>
          (c.virtualAt ?? 0) <= at + FOLLOW_UP_COVER_MS &&
          (c.msg === SWEEP_DONE || (c.msg === FOLLOW_UP_ARMED && (ag === null || agOf(c) === ag))),
      );
    if (!covered) uncoveredAt.push(`${ag ?? 'sweep'} @${new Date(at).toISOString()}`);
  });
  return { notArmed, uncovered: uncoveredAt.length, uncoveredAt };
}

export interface EventPathStats {
  /** The AG ApiServerSource's and the PingSource adapter's re-lists and backoffs. */
  readonly agSourceRelists: number;
  readonly agSourceBackoffs: number;
  readonly pingRelists: number;
  readonly pingBackoffs: number;
}

export function eventPathStats(system: System): EventPathStats {
  const ag = system.knative.apiServerSource.listWatch;
  const ping = system.knative.pings.listWatch;
  return {
    agSourceRelists: ag.relists,
    agSourceBackoffs: ag.backoffs,
    pingRelists: ping?.relists ?? 0,
    pingBackoffs: ping?.backoffs ?? 0,
  };
}
