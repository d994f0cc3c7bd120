// What each recovery step says as a Kubernetes Event (reason, type, action and note) and the
// Event objects themselves. Pure: time and the reporting instance are passed in
// (docs/adr/0033-kubernetes-events.md). The vocabulary and the Event's shape are vocabulary.ts.

import type { GateReason } from '../decision/gate.js';
import { REASON_FORCED, REASON_STALLED } from '../objects/conditions.js';
import { eventName } from './series.js';
import { isDns1123Subdomain } from '../codecs/names.js';
import { ISSUE } from '../packagesource/ready.js';
import { formatTimeMicro, formatTimeNano } from '../codecs/time.js';
import { AG_API_VERSION, AG_KIND, PS_API_VERSION, PS_KIND } from '../objects/types.js';
import {
  capNote,
  CLUSTER_SCOPED_EVENTS_NAMESPACE,
  EVENT_ACTION_CLEAR,
  EVENT_ACTION_FORCE,
  EVENT_ACTION_GIVE_UP,
  EVENT_ACTION_HEAL,
  EVENT_ACTION_OBSERVE,
  EVENT_ACTION_OBSERVE_HEAL,
  EVENT_ACTION_RESUME,
  EVENT_ACTION_VERIFY_OWNER,
  EVENT_REASON_EA_HEALED,
  EVENT_REASON_EA_LEFT,
  EVENT_REASON_EA_WOULD_HEAL,
  EVENT_REASON_FORCED,
  EVENT_REASON_OWNER_REFUSED,
  EVENT_REASON_RECOVERED,
  EVENT_REASON_STALLED,
  EVENT_REASON_WOULD_FORCE,
  EVENTS_API_VERSION,
  type EventStep,
  type EventSubject,
  type KubeEvent,
  REPORTING_CONTROLLER,
  REPORTING_INSTANCE_MAX,
  type StalledStep,
  type StepContent,
} from './vocabulary.js';
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
