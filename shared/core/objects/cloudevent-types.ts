// CloudEvent types this product accepts and emits. The Trigger filters in knative/ depend on
// these strings; a test cross-checks them against the manifests.

/** Knative ApiServerSource, Resource mode: data is the whole object. */
export const APISERVER_ADD = 'dev.knative.apiserver.resource.add';
export const APISERVER_UPDATE = 'dev.knative.apiserver.resource.update';
export const APISERVER_DELETE = 'dev.knative.apiserver.resource.delete';
/** Knative ApiServerSource, Reference mode: data is {kind, namespace, name, apiVersion}. */
export const APISERVER_REF_ADD = 'dev.knative.apiserver.ref.add';
export const APISERVER_REF_UPDATE = 'dev.knative.apiserver.ref.update';
export const APISERVER_REF_DELETE = 'dev.knative.apiserver.ref.delete';
/** Knative PingSource. */
export const PING = 'dev.knative.sources.ping';
/**
 * The CloudEvent extension each of our PingSources sets (spec.ceOverrides) and the Triggers match
 * on: a PingSource event's `source` names its namespace, this does not (docs/adr/0063).
 */
export const TIMER_EXTENSION = 'recoverytimer';
/** TIMER_EXTENSION's value on the 5-minute resync PingSource's events. */
export const TIMER_RESYNC = 'resync';
/** TIMER_EXTENSION's value on the follow-up alarm's events (the PingSource detect programs). */
export const TIMER_ALARM = 'alarm';

/** Our own action events, all under one prefix. */
export const ACTION_PREFIX = 'io.cozystack.sourcewatcher.';
/** detect → force-drift: the AG is due for a force (or for finishing a half-applied one). */
export const ACTION_FORCE = 'io.cozystack.sourcewatcher.force';
/** detect → force-drift: the AG is healthy again; remove the tracking annotations. */
export const ACTION_CLEAR_TRACKING = 'io.cozystack.sourcewatcher.clear-tracking';
/** detect → surface-stalled: the last attempt's window has closed; surface SourceWatcherStalled. */
export const ACTION_STALLED = 'io.cozystack.sourcewatcher.stalled';

export const ACTION_TYPES = [ACTION_FORCE, ACTION_CLEAR_TRACKING, ACTION_STALLED] as const;
export type ActionType = (typeof ACTION_TYPES)[number];

/** The CloudEvent `source` of action events emitted by detect. */
export const ACTION_SOURCE = '/source-watcher-recovery/detect';

/** Data carried by every action event. It is a hint: the receiver re-reads and re-decides. */
export interface ActionData {
  namespace: string;
  name: string;
  /** The AG's metadata.uid as detect saw it, when known. */
  uid?: string;
  /** The AG's metadata.resourceVersion the decision saw. */
  resourceVersion: string;
  /** Tracking attempts the decision saw. */
  attempts: number;
  /** When detect decided, RFC 3339. */
  decidedAt: string;
  /**
   * Present on a force that the lost-write signal opened: detect saw the outputs move while Ready
   * stayed Unknown between resourceVersion's previous version and resourceVersion. A hint only:
   * force-drift verifies it with its own history read of the AG it reads (anything that can post
   * to the Broker can claim it); a forged or stale signal gets the time rule.
   */
  signal?: ActionSignal;
}

export const SIGNAL_LOST_WRITE = 'lost-write';
export type ActionSignal = typeof SIGNAL_LOST_WRITE;
