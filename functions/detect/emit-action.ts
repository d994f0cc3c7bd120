// Sends an evaluation's action event to the Broker (the one write of detect's event path besides
// its alarm), unless this process sent the same action moments ago (recent-actions.ts).

import { readTracking } from '../../shared/core/index.js';
import type { ArtifactGenerator } from '../../shared/core/objects/types.js';
import {
  ACTION_SOURCE,
  SIGNAL_LOST_WRITE,
  type ActionData,
} from '../../shared/core/objects/cloudevent-types.js';
import { formatTimeNano } from '../../shared/core/codecs/time.js';
import type { Logger } from '../../shared/runtime/logger.js';
import type { DetectDeps } from './deps.js';
import type { Evaluation } from './evaluate.js';

/**
 * Emits the evaluation's action event, if any, unless this process emitted the same action (same
 * AG, resourceVersion, attempt and signal) moments ago (recent-actions.ts). True when it emitted.
 * Throws EmitError when the Broker refuses it.
 */
export async function emitAction(
  ag: ArtifactGenerator,
  evaluation: Evaluation,
  now: number,
  deps: DetectDeps,
  log: Logger,
): Promise<boolean> {
  const type = evaluation.action;
  if (type === undefined) return false;
  const meta = ag.metadata ?? {};
  const namespace = meta.namespace ?? '';
  const name = meta.name ?? '';
  const decision = evaluation.decision;
  const signalled = decision.kind === 'force' && decision.gate === 'lost-write';
  const data: ActionData = {
    namespace,
    name,
    ...(meta.uid !== undefined ? { uid: meta.uid } : {}),
    resourceVersion: meta.resourceVersion ?? '',
    attempts: readTracking(ag, now, deps.config.recovery).attempts,
    decidedAt: formatTimeNano(now),
    ...(signalled ? { signal: SIGNAL_LOST_WRITE } : {}),
  };
  const key = `${type} ${namespace}/${name} ${data.resourceVersion} ${data.attempts} ${data.signal ?? ''}`;
  if (deps.recentActions.repeats(key, now)) {
    log.debug({ action: type, attempt: data.attempts }, 'action emitted moments ago; not repeated');
    return false;
  }
  await deps.emitter.emit({
    type,
    source: ACTION_SOURCE,
    subject: `${namespace}/${name}`,
    data,
    time: now,
  });
  log.info(
    {
      namespace,
      name,
      decision: decision.kind,
      ...(decision.kind === 'force' ? { gate: decision.gate } : {}),
      attempt: data.attempts,
      action: type,
    },
    'action emitted',
  );
  deps.recentActions.emitted(key, now);
  if (decision.kind === 'force' && data.attempts === 0)
    deps.metrics?.stallFound({ namespace, name }, signalled ? 'lost-write' : 'time-rule');
  return true;
}
