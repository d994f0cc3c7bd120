// What a Kubernetes Event of ours is (events.k8s.io/v1): the reasons and actions it carries, the
// steps worth one, the Event object and the AG it is about. Pure
// (docs/adr/0033-kubernetes-events.md). What each step says, and the Event objects built from
// it, are content.ts.

import type { GateReason } from '../decision/gate.js';
import { REASON_FORCED, REASON_STALLED } from '../objects/conditions.js';
import { isDns1123Subdomain } from '../codecs/names.js';
import type { ArtifactGenerator } from '../objects/types.js';

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

/** The AG as an Event subject; null (no Event) unless it is a well-formed object from the server. */
export function subjectOf(ag: ArtifactGenerator): EventSubject | null {
  const meta = ag.metadata;
  const namespace = meta?.namespace;
  const name = meta?.name;
  const uid = meta?.uid;
  if (!isDns1123Subdomain(namespace) || namespace.length > 63 || !isDns1123Subdomain(name)) {
    return null;
  }
  if (typeof uid !== 'string' || uid === '' || uid.length > 128) return null;
  return { namespace, name, uid };
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
