// surface-stalled's owed verdict Events (docs/adr/0061-owed-events.md): the process that could not
// write a verdict's Event keeps it, answers 503, and its redelivery writes it before syncing. The
// verdict is named by the AG and its PackageSource together, so only the process that kept it
// writes it (force-drift's forces are also named from the AG alone).

import {
  createEventRecorder,
  type EventRecorder,
} from '../../shared/recovery/kube-event-recorder.js';
import type { Logger } from '../../shared/runtime/logger.js';
import {
  answerOwedRedelivery,
  payKeptEvents,
  type OwedSettlement,
} from '../../shared/recovery/owed-kube-events.js';
import { retryLater, type Outcome } from '../../shared/runtime/outcome.js';
import type { SurfaceStalledDeps } from './deps.js';

/** Writes the kept owed Events about `agKey` (every AG: null); 'clear' without owed Events. */
export async function owedFirst(
  agKey: string | null,
  deps: SurfaceStalledDeps,
  log: Logger,
): Promise<OwedSettlement> {
  return payKeptEvents(agKey, deps, log);
}

/**
 * The redelivery of this process's `event-owed` answer to the delivery `id` about `agKey` (the
 * resync: null): writes the kept Events and answers as the sync did, without syncing again; null
 * otherwise (the delivery runs in full).
 */
export async function owedRedelivery(
  id: string,
  agKey: string | null,
  deps: SurfaceStalledDeps,
  log: Logger,
): Promise<Outcome | null> {
  return answerOwedRedelivery(id, agKey, deps, log);
}

/** Answers 503 `event-owed` for the delivery `id`, remembering the sync's own `result`. */
export function owedAnswer(
  id: string,
  agKey: string | null,
  result: string,
  deps: SurfaceStalledDeps,
): Outcome {
  deps.owedEvents.answeredOwed(id, { agKey, result });
  return retryLater('event-owed');
}

/** The recorder that keeps failed Events as owed in `deps.owedEvents`. */
export function tracked(deps: SurfaceStalledDeps, log: Logger): EventRecorder {
  return createEventRecorder(deps, log, deps.owedEvents);
}
