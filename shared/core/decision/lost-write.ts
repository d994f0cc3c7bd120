// Early detection of the fluxcd/pkg#934 lost write (signal B, docs/adr/0014-early-detection.md).
//
// source-watcher v2.1.0 writes a build's verdict (Ready=True/False, conditions request) BEFORE the
// new inventory / observedSourcesDigest / lastHandledReconcileAt (rest-of-status request). So in an
// honest build the object whose outputs change already carries the verdict. When the conditions
// request is lost and the rest lands, the outputs change while Ready stays Unknown: comparing an
// AG with its immediately previous version shows it, no clock needed. The previous version comes
// from the API server's history (a read at resourceVersion - 1); this module only compares.

import type { RecoveryConfig } from '../config/recovery-config.js';
import { readyOf } from '../objects/conditions.js';
import { isFiniteNumber } from '../codecs/plain.js';
import { hasOutputs } from './stuck.js';
import type { ArtifactGenerator, Condition, InventoryEntry } from '../objects/types.js';

/** What the functions learned beyond the AG itself. Absent facts are "not seen". */
export interface Signals {
  /** The AG's outputs moved while Ready stayed Unknown on its generation (signal B). */
  readonly lostWrite: boolean;
}

export const NO_SIGNALS: Signals = Object.freeze({ lostWrite: false });
export const LOST_WRITE: Signals = Object.freeze({ lostWrite: true });

/** Ready Unknown on the current generation, with lastTransitionTime and outputs saved. */
function pendingReady(ag: ArtifactGenerator): Condition | undefined {
  const ready = readyOf(ag);
  const generation = ag.metadata?.generation;
  if (
    ready === undefined ||
    ready.status !== 'Unknown' ||
    !isFiniteNumber(generation) ||
    ready.observedGeneration !== generation ||
    typeof ready.lastTransitionTime !== 'string'
  ) {
    return undefined;
  }
  return ready;
}

/**
 * The AG looks like the #934 stuck state in a single snapshot: outputs saved, Ready Unknown on the
 * current generation. An honest build in progress looks exactly the same; only its history tells.
 */
export function lostWriteCandidate(ag: ArtifactGenerator): boolean {
  return hasOutputs(ag) && pendingReady(ag) !== undefined;
}

/**
 * Signal B: `current` is a candidate, `previous` is the same object (same uid, same generation)
 * with the same Unknown Ready (same lastTransitionTime), and inventory, observedSourcesDigest or
 * lastHandledReconcileAt differ between the two. `previous` null/undefined: no signal.
 */
export function outputsMovedWhileUnknown(
  previous: ArtifactGenerator | null | undefined,
  current: ArtifactGenerator,
): boolean {
  if (previous === null || previous === undefined) return false;
  if (!lostWriteCandidate(current)) return false;
  const uid = current.metadata?.uid;
  if (uid !== undefined && previous.metadata?.uid !== uid) return false;
  if (previous.metadata?.generation !== current.metadata?.generation) return false;
  const before = pendingReady(previous);
  const now = pendingReady(current);
  if (before === undefined || now === undefined) return false;
  if (before.lastTransitionTime !== now.lastTransitionTime) return false;
  const a = previous.status ?? {};
  const b = current.status ?? {};
  return (
    !sameInventory(a.inventory, b.inventory) ||
    a.observedSourcesDigest !== b.observedSourcesDigest ||
    a.lastHandledReconcileAt !== b.lastHandledReconcileAt
  );
}

/**
 * Whether reading the AG's previous version could open a gate that is closed without it: early
 * detection is on, the driver is not off, and the AG is a candidate. decide() asks it when nothing
 * else opens the gate (Decision 'healthy', needsHistory). Cheap: a healthy AG answers false at once.
 */
export function historyCouldHelp(
  ag: ArtifactGenerator,
  cfg: Pick<RecoveryConfig, 'earlyDetection' | 'mode'>,
): boolean {
  return cfg.earlyDetection && cfg.mode !== 'off' && lostWriteCandidate(ag);
}

function sameInventory(a: unknown, b: unknown): boolean {
  if (!Array.isArray(a) || !Array.isArray(b)) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (!sameEntry(a[i] as InventoryEntry | undefined, b[i] as InventoryEntry | undefined)) {
      return false;
    }
  }
  return true;
}

function sameEntry(a: InventoryEntry | undefined, b: InventoryEntry | undefined): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return a === b;
  return (
    a.kind === b.kind &&
    a.name === b.name &&
    a.namespace === b.namespace &&
    a.digest === b.digest &&
    a.filename === b.filename
  );
}
