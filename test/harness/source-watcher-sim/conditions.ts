// Conditions the way Flux sets and patches them:
// - setCondition follows apimachinery meta.SetStatusCondition: lastTransitionTime moves only when
//   the status changes; reason, message and observedGeneration are always updated.
// - diffConditions/applyConditions follow the fluxcd/pkg patch helper: the changes WE made since the
//   last patch are applied onto the freshly read list, so conditions others wrote survive. The
//   simulator owns every condition it changes (Ready, Reconciling), so its changes overwrite.
// - Order: the recorded source-watcher always sends Reconciling before Ready, also when Ready was
//   there first (a rebuild of a Ready=True AG). Both lists are kept in that order: Reconciling,
//   Stalled, Ready, then every other condition in the order it had.

import { clone, jsonEqual } from './json.js';
import type { ConditionStatus, SimCondition } from './types.js';

export function findCondition(
  conditions: readonly SimCondition[] | undefined,
  type: string,
): SimCondition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** RFC 3339 with second precision, UTC. */
export function rfc3339Seconds(epochMs: number): string {
  return new Date(Math.floor(epochMs / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export interface ConditionUpdate {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  observedGeneration: number;
}

const LEADING_TYPES = ['Reconciling', 'Stalled', 'Ready'];

function rank(c: SimCondition): number {
  const i = LEADING_TYPES.indexOf(c.type);
  return i < 0 ? LEADING_TYPES.length : i;
}

/** Sort in place, stable: Reconciling, Stalled, Ready first, the rest as they were. */
function order(list: SimCondition[]): SimCondition[] {
  return list.sort((a, b) => rank(a) - rank(b));
}

export function setCondition(list: SimCondition[], update: ConditionUpdate, nowMs: number): void {
  const existing = list.find((c) => c.type === update.type);
  if (!existing) {
    list.push({ ...update, lastTransitionTime: rfc3339Seconds(nowMs) });
    order(list);
    return;
  }
  if (existing.status !== update.status) {
    existing.status = update.status;
    existing.lastTransitionTime = rfc3339Seconds(nowMs);
  }
  existing.reason = update.reason;
  existing.message = update.message;
  existing.observedGeneration = update.observedGeneration;
}

export function removeCondition(list: SimCondition[], type: string): void {
  const i = list.findIndex((c) => c.type === type);
  if (i >= 0) list.splice(i, 1);
}

export type ConditionChange =
  { type: string; op: 'set'; condition: SimCondition } | { type: string; op: 'delete' };

/** The changes that turn `before` into `after`. */
export function diffConditions(
  before: readonly SimCondition[],
  after: readonly SimCondition[],
): ConditionChange[] {
  const changes: ConditionChange[] = [];
  for (const c of after) {
    const b = findCondition(before, c.type);
    if (!b || !jsonEqual(b, c)) changes.push({ type: c.type, op: 'set', condition: clone(c) });
  }
  for (const b of before) {
    if (!findCondition(after, b.type)) changes.push({ type: b.type, op: 'delete' });
  }
  return changes;
}

/** Apply our changes onto the latest list read from the server; other conditions are kept. */
export function applyConditions(
  latest: readonly SimCondition[],
  changes: readonly ConditionChange[],
): SimCondition[] {
  const out = clone([...latest]);
  for (const change of changes) {
    const i = out.findIndex((c) => c.type === change.type);
    if (change.op === 'delete') {
      if (i >= 0) out.splice(i, 1);
    } else if (i >= 0) {
      out[i] = clone(change.condition);
    } else {
      out.push(clone(change.condition));
    }
  }
  return order(out);
}
