// detect: decides, never writes AGs or PackageSources. AG events are evaluated one by one; a ping
// (the resync or a follow-up alarm) sweeps every AG and re-programs the follow-up alarm.

import {
  APISERVER_ADD,
  APISERVER_DELETE,
  APISERVER_REF_ADD,
  APISERVER_REF_DELETE,
  APISERVER_REF_UPDATE,
  APISERVER_UPDATE,
  PING,
} from '../../shared/core/objects/cloudevent-types.js';
import { needsHistory } from '../../shared/core/decision/decide.js';
import { parseArtifactGenerator } from '../../shared/core/objects/parse.js';
import type { ArtifactGenerator } from '../../shared/core/objects/types.js';
import type { IncomingEvent } from '../../shared/runtime/cloudevent-http.js';
import { errorSummary } from '../../shared/runtime/function-app.js';
import type { Logger } from '../../shared/runtime/logger.js';
import {
  handled,
  ignored,
  malformed,
  retryLater,
  type Outcome,
} from '../../shared/runtime/outcome.js';
import { isKubeError } from '../../shared/kube/errors.js';
import { agEventKind, refFromEventData } from '../../shared/runtime/ag-cloudevent.js';
import { readLostWriteSignal } from '../../shared/recovery/ag-history.js';
import type { DetectDeps } from './deps.js';
import { emitAction } from './emit-action.js';
import { evaluate, type Evaluation } from './evaluate.js';
import { COVERED_BY_REDELIVERY, COVERED_BY_RESYNC } from './follow-up-cover.js';
import { formatTimeNano } from '../../shared/core/codecs/time.js';
import { sweep } from './sweep.js';

/**
 * Answers synchronously when the event needs no I/O (a healthy AG, an ignored or malformed event:
 * the no-op path, bench P3), with a promise otherwise.
 */
export function handleDetect(
  event: IncomingEvent,
  log: Logger,
  deps: DetectDeps,
): Outcome | Promise<Outcome> {
  switch (event.type) {
    case APISERVER_ADD:
    case APISERVER_UPDATE:
      return onObjectEvent(event, log, deps);
    case APISERVER_REF_ADD:
    case APISERVER_REF_UPDATE:
      return onRefEvent(event, log, deps);
    case APISERVER_DELETE:
    case APISERVER_REF_DELETE:
      return ignored('delete');
    case PING:
      // A redelivery of this ping resumes an incomplete sweep (ADR 57).
      return sweep(log, deps, `${event.source} ${event.id}`);
    default:
      log.debug({ type: event.type }, 'event type ignored');
      return ignored('unknown-type');
  }
}

function onObjectEvent(
  event: IncomingEvent,
  log: Logger,
  deps: DetectDeps,
): Outcome | Promise<Outcome> {
  const kind = agEventKind(event);
  if (kind === 'other') return ignored('other-kind');
  const parsed = parseArtifactGenerator(event.data);
  if (!parsed.ok) {
    log.warn({ reason: parsed.error }, 'malformed event data');
    return malformed('malformed-data');
  }
  return onArtifactGenerator(parsed.ag, log, deps);
}

async function onRefEvent(event: IncomingEvent, log: Logger, deps: DetectDeps): Promise<Outcome> {
  if (agEventKind(event) === 'other') return ignored('other-kind');
  const ref = refFromEventData(event.data);
  if (ref === undefined) {
    log.warn({}, 'malformed event data');
    return malformed('malformed-data');
  }
  let ag: ArtifactGenerator;
  try {
    ag = await deps.kube.getArtifactGenerator(ref, { cached: true });
  } catch (e) {
    if (isKubeError(e, 'NotFound')) return handled('gone');
    throw e;
  }
  return onArtifactGenerator(ag, log, deps);
}

function onArtifactGenerator(
  ag: ArtifactGenerator,
  log: Logger,
  deps: DetectDeps,
): Outcome | Promise<Outcome> {
  const now = deps.clock.now();
  const evaluation = evaluate(ag, now, deps);
  if (needsHistory(evaluation.decision)) return withHistory(ag, evaluation, now, log, deps);
  if (isNoOp(evaluation)) return noOp(ag, evaluation, log, false);
  return act(ag, evaluation, now, log, deps, false);
}

/**
 * Outputs saved and Ready Unknown: an honest build in progress, or a lost Ready write. The AG's
 * previous version tells them apart (one read). A transient failure of that read leaves the
 * decision without the signal (the time rule, its follow-up armed), and only the answer asks for
 * a redelivery that may see it.
 */
async function withHistory(
  ag: ArtifactGenerator,
  timeRule: Evaluation,
  now: number,
  log: Logger,
  deps: DetectDeps,
): Promise<Outcome> {
  const agLog = log.child({ namespace: ag.metadata?.namespace, name: ag.metadata?.name });
  const reading = await readLostWriteSignal(deps.previousVersions, ag, agLog);
  deps.notices.reportGap(reading, agLog);
  const evaluation = reading.signals.lostWrite
    ? evaluate(ag, now, deps, reading.signals)
    : timeRule;
  const historyTrouble = reading.gap === 'transient';
  if (isNoOp(evaluation)) return noOp(ag, evaluation, log, historyTrouble);
  return act(ag, evaluation, now, log, deps, historyTrouble);
}

function isNoOp(evaluation: Evaluation): boolean {
  return evaluation.action === undefined && evaluation.nextCheck === null;
}

/** The no-op path: no API call, no emit, no child logger. */
function noOp(
  ag: ArtifactGenerator,
  evaluation: Evaluation,
  log: Logger,
  historyTrouble: boolean,
): Outcome {
  log.debug(
    {
      namespace: ag.metadata?.namespace,
      name: ag.metadata?.name,
      decision: evaluation.decision.kind,
    },
    'nothing to do',
  );
  return historyTrouble ? retryLater('history') : handled(evaluation.decision.kind);
}

/** Emits the action that is due (if any) and arms the follow-up (if one is due later). */
async function act(
  ag: ArtifactGenerator,
  evaluation: Evaluation,
  now: number,
  log: Logger,
  deps: DetectDeps,
  historyTrouble: boolean,
): Promise<Outcome> {
  const agLog = log.child({ namespace: ag.metadata?.namespace, name: ag.metadata?.name });
  await emitAction(ag, evaluation, now, deps, agLog);
  if (evaluation.nextCheck !== null) {
    try {
      await deps.followUps.ensureBy(evaluation.nextCheck, agLog);
    } catch (e) {
      // The decision itself was delivered. A transient failure answers 503: the redelivery
      // evaluates the AG again and arms (or emits, once due). Whatever happens to it, the resync
      // sweeps every AG within its period: it emits what is due and arms the earliest due time,
      // alarm or no alarm (docs/adr/0061). The log line says which covers it.
      const redelivered = isKubeError(e, 'Transient') || isKubeError(e, 'Conflict');
      agLog.warn(
        {
          err: errorSummary(e),
          due: formatTimeNano(evaluation.nextCheck),
          coveredBy: redelivered ? COVERED_BY_REDELIVERY : COVERED_BY_RESYNC,
        },
        'follow-up not armed',
      );
      if (redelivered) return retryLater('follow-up');
    }
  }
  return historyTrouble ? retryLater('history') : handled(evaluation.decision.kind);
}
