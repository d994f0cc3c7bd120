// force-drift: the only writer of AG recovery state. The event is a hint: it re-reads the AG,
// re-decides with the core, and writes with resourceVersion preconditions (docs/adr/0008).

import { ACTION_CLEAR_TRACKING, ACTION_FORCE } from '../../shared/core/objects/cloudevent-types.js';
import { parseActionData } from '../../shared/core/objects/parse.js';
import type { AgRef, ArtifactGenerator } from '../../shared/core/objects/types.js';
import {
  decide,
  forcedStep,
  needsHistory,
  NO_SIGNALS,
  recoveredStep,
  resumedStep,
  unfinishedAskedForce,
  wouldForceStep,
  type Decision,
} from '../../shared/core/index.js';
import { isKubeError } from '../../shared/kube/errors.js';
import { AGAIN, REDECIDE_ROUNDS, redecide } from '../../shared/kube/redecide.js';
import type { PreviousVersion } from '../../shared/kube/port.js';
import { ownerCheck, type OwnerCheck } from './owner.js';
import type { IncomingEvent } from '../../shared/runtime/cloudevent-http.js';
import {
  createEventRecorder,
  type RecordEvent,
} from '../../shared/recovery/kube-event-recorder.js';
import {
  answerOwedRedelivery,
  payOwedEvents,
  type OwedSettlement,
} from '../../shared/recovery/owed-kube-events.js';
import type { Logger } from '../../shared/runtime/logger.js';
import {
  handled,
  ignored,
  malformed,
  retryLater,
  type Outcome,
} from '../../shared/runtime/outcome.js';
import { readLostWriteSignal, type HistoryReading } from '../../shared/recovery/ag-history.js';
import type { ForceDriftDeps } from './deps.js';
import { observeLostWriteToForce } from './lost-write-metric.js';
import { clearTracking, forceAttempt, resumeForce, type StepResult } from './writes.js';

export async function handleForceDrift(
  event: IncomingEvent,
  log: Logger,
  deps: ForceDriftDeps,
): Promise<Outcome> {
  if (event.type !== ACTION_FORCE && event.type !== ACTION_CLEAR_TRACKING) {
    return ignored('unknown-type');
  }
  const parsed = parseActionData(event.data);
  if (!parsed.ok) {
    log.warn({ reason: parsed.error }, 'malformed event data');
    return malformed('malformed-data');
  }
  const ref: AgRef = { namespace: parsed.value.namespace, name: parsed.value.name };
  const agLog = log.child({ namespace: ref.namespace, name: ref.name });
  const agKey = `${ref.namespace}/${ref.name}`;
  // The redelivery of this process's `event-owed` answer: only the step's Events are left.
  const paid = await answerOwedRedelivery(event.id, agKey, deps, agLog);
  if (paid !== null) return paid;
  // An Event that failed transiently (a step's, an owner refusal's) is kept as owed: this delivery
  // answers 503 so that its redelivery writes it (docs/adr/0061).
  const record = createEventRecorder(deps, agLog, deps.owedEvents);
  const asked = event.type === ACTION_FORCE ? parsed.value.attempts : null;
  let owed: OwedSettlement | undefined;

  const signalled = parsed.value.signal !== undefined;
  // A signalled event's history read starts beside the read of the AG, at the event's revision: it
  // is the AG's own revision unless the AG moved on, and a storm's slow answers then overlap. The
  // answer is kept by the process either way (docs/adr/0045).
  const early = signalled
    ? {
        rv: parsed.value.resourceVersion,
        read: deps.previousVersions.before(ref, parsed.value.resourceVersion),
      }
    : undefined;
  return redecide<Outcome>(
    async (round) => {
      let ag: ArtifactGenerator;
      try {
        ag = await deps.kube.getArtifactGenerator(ref);
      } catch (e) {
        if (isKubeError(e, 'NotFound')) return handled('gone');
        throw e;
      }
      // The event's signal is a hint (docs/adr/0008): anything that can post to the Broker can send
      // one. A signalled force is verified here with one history read of the AG as read now; a
      // forged or stale signal, or a history that cannot be read, leaves the time rule to decide.
      const owner = ownerCheck(ag, deps, agLog, record);
      const sameRevision = early !== undefined && early.rv === ag.metadata?.resourceVersion;
      // Before this delivery acts, and once: the Events it owes about the AG as read (a new claim
      // would replace the step they report on the AG).
      owed ??= await payOwedEvents(ag, asked, deps, agLog);
      const { decision, now, reading } = await decideWithSignal(
        ag,
        signalled,
        deps,
        agLog,
        owner,
        sameRevision ? early.read : undefined,
      );
      const result = await act(ag, ref, { decision, now }, asked, owner, deps, agLog, record);
      if (result === 'forced') observeLostWriteToForce(ag, reading.signals, parsed.value, deps);
      if (result === 'in-flight') return retryLater('claim-in-flight');
      if (result === 'nothing-to-do' && reading.gap === 'transient') {
        // The signal could not be checked: a redelivery may check it; the time rule stays armed by
        // detect's follow-up either way.
        return retryLater('history');
      }
      if (result === 'conflict') {
        agLog.debug({ round }, 'precondition failed; re-reading');
        return AGAIN;
      }
      if (record.owes() || owed === 'owed') {
        deps.owedEvents.answeredOwed(event.id, { agKey, result });
        return retryLater('event-owed');
      }
      return handled(result);
    },
    {
      exhausted: () => {
        agLog.warn({ rounds: REDECIDE_ROUNDS }, 'gave up re-deciding after conflicts');
        return retryLater('conflict');
      },
    },
  );
}

async function act(
  ag: ArtifactGenerator,
  ref: AgRef,
  decided: { decision: Decision; now: number },
  askedAttempts: number | null,
  owner: OwnerCheck,
  deps: ForceDriftDeps,
  log: Logger,
  record: RecordEvent,
): Promise<StepResult> {
  const { now } = decided;
  const cfg = deps.config.recovery;
  let decision = decided.decision;
  if (decision.kind === 'wait' && askedAttempts !== null) {
    // The force this event asked for is claimed: finish it if its claimer did not (ADR 44).
    const asked = unfinishedAskedForce(decision, ag, now, cfg, askedAttempts);
    if (asked === 'in-flight') return 'in-flight';
    if (asked === 'resume') {
      decision = { kind: 'resume', attempt: decision.attempts, gate: decision.gate };
    }
  }
  const observe = deps.config.recovery.mode === 'observe';
  if ((decision.kind === 'force' || decision.kind === 'resume') && (await owner.deleting())) {
    log.info({ decision: decision.kind }, 'PackageSource being deleted; not forcing');
    return 'owner-deleting';
  }
  switch (decision.kind) {
    case 'force':
      if (observe) {
        log.info({ decision: 'force', attempt: decision.attempt, observe: true }, 'would force');
        await record(ag, wouldForceStep(ag, decision.attempt, cfg));
        return 'observed';
      }
      return recordStep(
        await forceAttempt(ag, ref, decision.attempt, decision.gate, now, deps, log),
        {
          ifResult: 'forced',
          event: () => record(ag, forcedStep(decision.attempt, now, cfg, decision.gate)),
        },
      );
    case 'resume':
      if (observe) {
        log.info(
          { decision: 'resume', attempt: decision.attempt, observe: true },
          'would resume force',
        );
        return 'observed';
      }
      return recordStep(await resumeForce(ag, ref, now, deps, log), {
        ifResult: 'resumed',
        event: () => record(ag, resumedStep(ag, now, cfg)),
      });
    case 'healthy':
      if (!decision.clearTracking) return 'nothing-to-do';
      if (observe) {
        log.info({ decision: 'clear-tracking', observe: true }, 'would clear tracking');
        return 'observed';
      }
      return recordStep(await clearTracking(ag, ref, deps, log), {
        ifResult: 'cleared',
        event: () => record(ag, recoveredStep(ag, now, cfg)),
      });
    case 'wait':
      return 'waiting';
    case 'give-up':
      return 'given-up';
    case 'ignore':
      return decision.why === 'deleting' ? 'deleting' : 'nothing-to-do';
  }
}

const UNSIGNALLED: HistoryReading = Object.freeze({ signals: NO_SIGNALS });

/**
 * The decision on `ag`, once per round: with the lost-write signal verified on `ag` when the event
 * was signalled and the decision asks for the history (nothing else opens the gate and the AG has
 * the stall's shape). The owner's deletion check, which a force then needs, starts beside the
 * history read so the two overlap.
 */
async function decideWithSignal(
  ag: ArtifactGenerator,
  signalled: boolean,
  deps: ForceDriftDeps,
  log: Logger,
  owner: OwnerCheck,
  early: Promise<PreviousVersion> | undefined,
): Promise<{ decision: Decision; now: number; reading: HistoryReading }> {
  const cfg = deps.config.recovery;
  const now = deps.clock.now();
  const decision = decide(ag, now, cfg);
  if (!signalled || !needsHistory(decision)) return { decision, now, reading: UNSIGNALLED };
  owner.start();
  const reading = await readLostWriteSignal(deps.previousVersions, ag, log, early);
  deps.notices.reportGap(reading, log);
  const later = deps.clock.now();
  return { decision: decide(ag, later, cfg, reading.signals), now: later, reading };
}

/** Writes the step's Event when the step happened (`ifResult`); the result is the step's either way. */
async function recordStep(
  result: StepResult,
  step: { ifResult: StepResult; event: () => Promise<unknown> },
): Promise<StepResult> {
  if (result === step.ifResult) await step.event();
  return result;
}
