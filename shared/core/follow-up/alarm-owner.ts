// The follow-up alarm belongs to the install (docs/adr/0067): it carries the install's
// part-of label (the one knative/base and each knative/functions/<name> give every object) and an
// ownerReference to the resync PingSource, an object every install applies, so that the garbage
// collector removes the alarm when the install goes (`kubectl delete -k`, Flux's prune, the `off`
// overlay). Pure: functions/detect/alarm-owner.ts reads the owner's uid from the API server.

import { PING_API_VERSION, PING_KIND, type OwnerReference } from '../objects/types.js';

/** The label every object of the install carries (kustomize `labels:` in knative/base and knative/functions/*). */
export const PART_OF_LABEL = 'app.kubernetes.io/part-of';
export const PART_OF = 'source-watcher-recovery';

/** The labels of the alarm PingSource: the install's, and what it is. */
export const ALARM_LABELS: Readonly<Record<string, string>> = {
  [PART_OF_LABEL]: PART_OF,
  'app.kubernetes.io/component': 'recovery-alarm',
};

/**
 * The alarm's owner reference to the resync PingSource `name` whose uid is `uid`. Not a controller
 * reference (nothing reconciles the alarm from its owner) and no blockOwnerDeletion (that would
 * need `update` on the owner's finalizers, and the alarm must never hold its owner up).
 */
export function alarmOwnerReference(name: string, uid: string): OwnerReference {
  return { apiVersion: PING_API_VERSION, kind: PING_KIND, name, uid };
}

/**
 * Whether `refs` name the resync PingSource `name`. (One with a uid of an earlier resync object
 * needs no repair: the garbage collector finds that owner gone and removes the alarm, and the next
 * write creates it afresh.)
 */
export function ownedBy(refs: readonly OwnerReference[] | undefined, name: string): boolean {
  return (refs ?? []).some((r) => r.kind === PING_KIND && r.name === name);
}
