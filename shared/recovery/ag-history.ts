// The lost-write signal from the AG's history (docs/adr/0014-early-detection.md), read so that a
// failed read is "no signal", never a failed decision: the time rule decides alone and the caller
// still arms what the recovery needs. Shared by detect (event path and sweep) and force-drift
// (which verifies a signalled force itself).

import {
  LOST_WRITE,
  NO_SIGNALS,
  outputsMovedWhileUnknown,
  type ArtifactGenerator,
  type Signals,
} from '../core/index.js';
import { isKubeError, type KubeError } from '../kube/errors.js';
import type { PreviousVersion } from '../kube/port.js';
import type { Logger } from '../runtime/logger.js';
import type { PreviousVersions } from './previous-versions.js';

/**
 * Why the history gave no answer:
 * - compacted: etcd no longer has the revision (410 Gone; 5 minutes by default);
 * - not-comparable: the resourceVersion is not an integer the server can step back from;
 * - not-found: the history read answered 404 (never taken to mean the AG is gone);
 * - refused: the server refuses an exact read at that revision (400/422);
 * - forbidden: RBAC refuses the read (403);
 * - transient: timeout, 429, 5xx or a connection error: a later delivery may succeed;
 * - skipped: the caller's budget for history reads is spent (the sweep).
 */
export type HistoryGap =
  'compacted' | 'not-comparable' | 'not-found' | 'refused' | 'forbidden' | 'transient' | 'skipped';

export interface HistoryReading {
  readonly signals: Signals;
  /** Set when the history could not be read: the decision has no signal. */
  readonly gap?: HistoryGap;
  /** The API error behind the gap, for logs and (transient) for the answer. */
  readonly error?: KubeError;
}

const NO_HISTORY_REF: HistoryReading = Object.freeze({
  signals: NO_SIGNALS,
  gap: 'not-comparable',
});

/**
 * The AG's previous version (kept by the process, or one read), compared with the AG. Never throws
 * a KubeError: every API failure is a gap with no signal. `early` is a read of the same revision
 * already started by the caller (force-drift starts it beside its own read of the AG).
 */
export async function readLostWriteSignal(
  history: PreviousVersions,
  ag: ArtifactGenerator,
  log: Logger,
  early?: Promise<PreviousVersion>,
): Promise<HistoryReading> {
  const meta = ag.metadata ?? {};
  const rv = meta.resourceVersion;
  if (rv === undefined || rv === '' || meta.namespace === undefined || meta.name === undefined) {
    return NO_HISTORY_REF;
  }
  let previous;
  try {
    previous = await (early ?? history.before({ namespace: meta.namespace, name: meta.name }, rv));
  } catch (e) {
    if (!isKubeError(e)) throw e;
    return { signals: NO_SIGNALS, gap: gapOf(e), error: e };
  }
  if (previous.kind === 'unavailable') return { signals: NO_SIGNALS, gap: previous.why };
  if (previous.kind === 'absent' || !outputsMovedWhileUnknown(previous.ag, ag)) {
    return { signals: NO_SIGNALS };
  }
  log.info(
    { resourceVersion: rv, previousResourceVersion: previous.ag.metadata?.resourceVersion },
    'lost Ready write detected',
  );
  return { signals: LOST_WRITE };
}

function gapOf(e: KubeError): HistoryGap {
  switch (e.kind) {
    case 'NotFound':
      return 'not-found';
    case 'Forbidden':
      return 'forbidden';
    case 'Invalid':
      return 'refused';
    case 'Conflict':
    case 'Transient':
      return 'transient';
  }
}
