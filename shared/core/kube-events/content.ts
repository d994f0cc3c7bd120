// What each recovery step says as a Kubernetes Event (events.k8s.io/v1): reason, type, action and
// note, and the Event object itself. Pure: time and the reporting instance are passed in
// (docs/adr/0033-kubernetes-events.md).

import type { GateReason } from './gate.js';
import { REASON_FORCED, REASON_STALLED } from './conditions.js';
import { eventName } from './kube-event-series.js';
import { isDns1123Subdomain } from './names.js';
import { ISSUE } from './packagesource.js';
import { formatTimeMicro, formatTimeNano } from './time.js';
import { AG_API_VERSION, AG_KIND, PS_API_VERSION, PS_KIND } from './types.js';

export const EVENTS_API_VERSION = 'events.k8s.io/v1';
/**
 * Where an Event about a cluster-scoped object (the PackageSource) lives: client-go's recorders
 * put such Events in `default`, and `kubectl describe` looks for them there.
 */
export const CLUSTER_SCOPED_EVENTS_NAMESPACE = 'default';
/** reportingController of every Event this product writes (a qualified name, stable). */
export const REPORTING_CONTROLLER = 'cozystack.io/source-watcher-recovery';

export const EVENT_REASON_FORCED = REASON_FORCED;
export const EVENT_REASON_RECOVERED = 'SourceWatcherRecovered';
export const EVENT_REASON_STALLED = REASON_STALLED;
export const EVENT_REASON_WOULD_FORCE = 'SourceWatcherRecoveryWouldForce';

export const EVENT_ACTION_FORCE = 'Force';
export const EVENT_ACTION_RESUME = 'ResumeForce';
export const EVENT_ACTION_CLEAR = 'ClearTracking';
export const EVENT_ACTION_GIVE_UP = 'GiveUp';
export const EVENT_ACTION_OBSERVE = 'ObserveForce';
/** heal-external-artifacts (docs/adr/0038). */
export const EVENT_REASON_EA_HEALED = 'ExternalArtifactDriftHealed';
export const EVENT_REASON_EA_WOULD_HEAL = 'ExternalArtifactDriftWouldHeal';
export const EVENT_ACTION_HEAL = 'HealExternalArtifacts';
export const EVENT_ACTION_OBSERVE_HEAL = 'ObserveHealExternalArtifacts';
/** heal-external-artifacts left a drift that source-watcher could not re-create (docs/adr/0054). */
export const EVENT_REASON_EA_LEFT = 'ExternalArtifactDriftLeft';
/** An AG's controller ownerReference that does not make it a PackageSource's (docs/adr/0053). */
export const EVENT_REASON_OWNER_REFUSED = 'PackageSourceOwnerRefused';
export const EVENT_ACTION_VERIFY_OWNER = 'VerifyOwner';

/** The API server refuses a note longer than this (bytes). */
export const NOTE_MAX_BYTES = 1024;
/** reportingInstance longer than this is refused by the API server. */
export const REPORTING_INSTANCE_MAX = 128;

export type EventType = 'Normal' | 'Warning';

/** One recovery step worth an Event. `claimAt` is the step's claim time (the tracking stamp). */
export type EventStep =
  | {
      kind: 'forced';
      attempt: number;
      maxAttempts: number;
      claimAt: number;
      /** What opened the gate: the note says how the stall was found (early or by the time rule). */
      gate?: GateReason;
    }
  | { kind: 'resumed'; attempt: number; maxAttempts: number; claimAt: number }
  | {
      kind: 'recovered';
      attempts: number;
      claimAt: number | null;
      readyStatus: string;
      readyReason: string;
    }
  | {
      kind: 'stalled';
      attempts: number;
      claimAt: number | null;
      packageSource: string | null;
      /** The PackageSource's uid: with it the verdict also gets an Event regarding the PackageSource. */
      packageSourceUid?: string | null;
    }
  | { kind: 'would-force'; attempt: number; maxAttempts: number; stallAt: number | null }
  | {
      kind: 'healed' | 'would-heal';
      /** What drifted: "missing ns/name" or "digest ns/name". */
      drift: string[];
      /**
       * ExternalArtifacts deleted (to be) so that source-watcher re-creates them, each as
       * "ns/name (status.artifact.digest owned by MANAGER)".
       */
      recreated: string[];
      bumped: boolean;
      /** What makes two reports the same heal (the bump's requestedAt, or the objects judged). */
      stamp: string;
    }
  | {
      kind: 'heal-left';
      /** What drifted: "digest ns/name". */
      drift: string[];
      /** Each object left, with who would re-create it: "ns/name (as IDENTITY)". */
      left: string[];
      /** The objects judged. */
      stamp: string;
    }
  | {
      kind: 'owner-refused';
      /** The reference as the AG carries it (unverified). */
      packageSource: string;
      uid: string;
      /** Why it is refused (a code), and the sentence that says so. */
      why: string;
      detail: string;
    };

export type StalledStep = Extract<EventStep, { kind: 'stalled' }>;

/** The AG an Event is about, as read from the API server. */
export interface EventSubject {
  namespace: string;
  name: string;
  uid: string;
}

export interface EventObjectReference {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
}

export interface EventSeries {
  count: number;
  lastObservedTime: string;
}

export interface KubeEvent {
  apiVersion: string;
  kind: 'Event';
  metadata: { name: string; namespace: string; resourceVersion?: string };
  eventTime: string;
  reportingController: string;
  reportingInstance: string;
  action: string;
  reason: string;
  note: string;
  type: EventType;
  regarding: EventObjectReference;
  related?: EventObjectReference;
  series?: EventSeries;
}

export interface StepContent {
  reason: string;
  action: string;
  type: EventType;
  note: string;
  /** What makes two occurrences "the same step": part of the Event's name. */
  stamp: string;
}

/** Reason, action, type, note and stamp of a step. */
export function stepContent(step: EventStep, subject: EventSubject): StepContent {
  const ag = `${subject.namespace}/${subject.name}`;
  switch (step.kind) {
    case 'forced':
      return {
        reason: EVENT_REASON_FORCED,
        action: EVENT_ACTION_FORCE,
        type: 'Normal',
        note:
          `attempt ${step.attempt}/${step.maxAttempts}: Ready=False/${REASON_FORCED} and a new ` +
          `reconcile.fluxcd.io/requestedAt, so source-watcher rebuilds (${ISSUE})` +
          foundBy(step.gate),
        stamp: stampOf(step.claimAt),
      };
    case 'resumed':
      return {
        reason: EVENT_REASON_FORCED,
        action: EVENT_ACTION_RESUME,
        type: 'Normal',
        note:
          `attempt ${step.attempt}/${step.maxAttempts} resumed: finished an interrupted force ` +
          `(marker and requestedAt) without counting a new attempt (${ISSUE})`,
        stamp: stampOf(step.claimAt),
      };
    case 'recovered':
      return {
        reason: EVENT_REASON_RECOVERED,
        action: EVENT_ACTION_CLEAR,
        type: 'Normal',
        note:
          `source-watcher rebuilt it: Ready=${step.readyStatus}/${step.readyReason} after ` +
          `${step.attempts} forced rebuild(s); recovery tracking cleared`,
        stamp: stampOf(step.claimAt),
      };
    case 'stalled':
      return {
        reason: EVENT_REASON_STALLED,
        action: EVENT_ACTION_GIVE_UP,
        type: 'Warning',
        note:
          `source-watcher did not rebuild ArtifactGenerator ${ag} after ${step.attempts} ` +
          `forced rebuild(s); its Ready condition was lost (${ISSUE}). Runbook ` +
          `"SourceWatcherStalled": restart source-watcher (kubectl -n flux-system rollout ` +
          `restart deployment/source-watcher), inspect the ArtifactGenerator, then remove the ` +
          `tracking annotations to retry` +
          (step.packageSource !== null ? `; PackageSource ${step.packageSource} shows it` : ''),
        stamp: stampOf(step.claimAt),
      };
    case 'would-force':
      return {
        reason: EVENT_REASON_WOULD_FORCE,
        action: EVENT_ACTION_OBSERVE,
        type: 'Normal',
        note:
          `observe mode: would force attempt ${step.attempt}/${step.maxAttempts} ` +
          `(${ISSUE}); nothing was written`,
        stamp: stampOf(step.stallAt),
      };
    case 'healed':
    case 'would-heal': {
      const what =
        (step.recreated.length > 0
          ? `deleted ${step.recreated.join(', ')} so that source-watcher re-creates it`
          : '') +
        (step.recreated.length > 0 && step.bumped ? ', and ' : '') +
        (step.bumped
          ? 'a new reconcile.fluxcd.io/requestedAt so that source-watcher rebuilds'
          : '');
      const observe = step.kind === 'would-heal';
      return {
        reason: observe ? EVENT_REASON_EA_WOULD_HEAL : EVENT_REASON_EA_HEALED,
        action: observe ? EVENT_ACTION_OBSERVE_HEAL : EVENT_ACTION_HEAL,
        type: 'Normal',
        note:
          `ExternalArtifacts drifted from the inventory (${step.drift.join(', ')}): ` +
          (observe ? `observe mode: would write ${what}; nothing was written` : what) +
          ' (fluxcd/source-watcher#346)',
        stamp: step.stamp,
      };
    }
    case 'heal-left':
      return {
        reason: EVENT_REASON_EA_LEFT,
        action: EVENT_ACTION_HEAL,
        type: 'Warning',
        note:
          `ExternalArtifacts drifted from the inventory (${step.drift.join(', ')}); not deleted: ` +
          `source-watcher could not re-create ${step.left.join(', ')} (fluxcd/source-watcher#346)`,
        stamp: step.stamp,
      };
    case 'owner-refused':
      return {
        reason: EVENT_REASON_OWNER_REFUSED,
        action: EVENT_ACTION_VERIFY_OWNER,
        type: 'Warning',
        note:
          `controller ownerReference to PackageSource ${step.packageSource} ` +
          `(uid ${JSON.stringify(step.uid.slice(0, 64))}) refused: ${step.detail}. Recovered as a ` +
          `plain Flux ArtifactGenerator; no PackageSource shows its state`,
        stamp: `${step.packageSource}\n${step.uid}\n${step.why}`,
      };
  }
}

/**
 * The verdict as seen from the PackageSource that shows it: what `kubectl describe packagesource`
 * prints. Same reason, action, type and stamp as the AG's verdict Event; the note names the AG.
 */
export function packageSourceStepContent(step: StalledStep, ag: EventSubject): StepContent {
  const name = `${ag.namespace}/${ag.name}`;
  return {
    reason: EVENT_REASON_STALLED,
    action: EVENT_ACTION_GIVE_UP,
    type: 'Warning',
    note:
      `source-watcher did not rebuild ArtifactGenerator ${name} after ${step.attempts} forced ` +
      `rebuild(s); its Ready condition was lost (${ISSUE}), so this PackageSource is ` +
      `Ready=False/${REASON_STALLED}. Runbook "SourceWatcherStalled": restart source-watcher ` +
      `(kubectl -n flux-system rollout restart deployment/source-watcher), inspect ArtifactGenerator ` +
      `${name}, then remove its tracking annotations to retry`,
    stamp: stampOf(step.claimAt),
  };
}

/**
 * Every Event of a step: the AG's, and for a verdict with a known PackageSource (name and uid) also
 * the PackageSource's, in `default`. Same instant, same reporting instance.
 */
export function buildEvents(
  step: EventStep,
  subject: EventSubject,
  reportingInstance: string,
  now: number,
): KubeEvent[] {
  const events = [buildEvent(step, subject, reportingInstance, now)];
  if (step.kind === 'stalled') {
    const ps = buildPackageSourceEvent(step, subject, reportingInstance, now);
    if (ps !== null) events.push(ps);
  }
  return events;
}

/**
 * The verdict's Event regarding the PackageSource (cluster-scoped: no namespace in `regarding`, the
 * Event in `default`), the AG related. Null without a well-formed PackageSource name and uid.
 * Named like the AG's Events: the PackageSource's name and a hash of (its uid, reason, action,
 * stamp).
 */
export function buildPackageSourceEvent(
  step: StalledStep,
  ag: EventSubject,
  reportingInstance: string,
  now: number,
): KubeEvent | null {
  const name = step.packageSource;
  const uid = step.packageSourceUid;
  if (!isDns1123Subdomain(name) || typeof uid !== 'string' || uid === '' || uid.length > 128) {
    return null;
  }
  const c = packageSourceStepContent(step, ag);
  return {
    ...eventOf(c, { name, uid }, CLUSTER_SCOPED_EVENTS_NAMESPACE, reportingInstance, now),
    regarding: { apiVersion: PS_API_VERSION, kind: PS_KIND, name, uid },
    related: {
      apiVersion: AG_API_VERSION,
      kind: AG_KIND,
      namespace: ag.namespace,
      name: ag.name,
      uid: ag.uid,
    },
  };
}

/** What every Event of ours has: its name (from the regarded object), time, reporter and content. */
function eventOf(
  c: StepContent,
  regarded: { name: string; uid: string },
  namespace: string,
  reportingInstance: string,
  now: number,
): Omit<KubeEvent, 'regarding'> {
  return {
    apiVersion: EVENTS_API_VERSION,
    kind: 'Event',
    metadata: { name: eventName(regarded, c.reason, c.action, c.stamp), namespace },
    eventTime: formatTimeMicro(now),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: reportingInstance.slice(0, REPORTING_INSTANCE_MAX),
    action: c.action,
    reason: c.reason,
    note: capNote(c.note),
    type: c.type,
  };
}

/** The Event for a step first seen at `now`, named so that every replica picks the same name. */
export function buildEvent(
  step: EventStep,
  subject: EventSubject,
  reportingInstance: string,
  now: number,
): KubeEvent {
  const c = stepContent(step, subject);
  const event: KubeEvent = {
    ...eventOf(c, subject, subject.namespace, reportingInstance, now),
    regarding: {
      apiVersion: AG_API_VERSION,
      kind: AG_KIND,
      namespace: subject.namespace,
      name: subject.name,
      uid: subject.uid,
    },
  };
  if (step.kind === 'stalled' && step.packageSource !== null) {
    event.related = {
      apiVersion: PS_API_VERSION,
      kind: PS_KIND,
      name: step.packageSource,
      ...(typeof step.packageSourceUid === 'string' && step.packageSourceUid !== ''
        ? { uid: step.packageSourceUid }
        : {}),
    };
  }
  return event;
}

function stampOf(t: number | null): string {
  return t === null ? 'unknown' : formatTimeNano(t);
}

/** At most NOTE_MAX_BYTES of UTF-8, cut on a character boundary. */
export function capNote(note: string): string {
  let bytes = 0;
  let out = '';
  for (const ch of note) {
    const cp = ch.codePointAt(0) ?? 0;
    const size = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (bytes + size > NOTE_MAX_BYTES) break;
    bytes += size;
    out += ch;
  }
  return out;
}

/**
 * How the stall behind a force was found. A first force by the time rule means early detection
 * did not see the lost write (no signal in the AG's history, or the history could not be read):
 * operators see that here without reading logs (docs/operations.md).
 */
function foundBy(gate: GateReason | undefined): string {
  switch (gate) {
    case undefined:
      return '';
    case 'lost-write':
      return '; found early: its outputs moved while Ready stayed Unknown';
    case 'stuck':
      return (
        '; found by the time rule (Ready Unknown past the grace period): early detection did not ' +
        'see the lost write (no signal, or the history read failed: detect logs "early detection degraded")'
      );
    case 'rebuilding':
      return "; source-watcher's rebuild after the last force has not written Ready";
    case 'own-marker':
      return "; the last force's marker is still in place";
  }
}
