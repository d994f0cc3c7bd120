// The sweep: list every AG page by page (not from the watch cache, which ignores `limit`), evaluate
// each like an update, emit the due actions, then program the follow-up alarm to the earliest due
// time (or remove it when nothing is due).
//
// Bounded under a degraded API server (docs/adr/0014-early-detection.md, docs/operations.md):
// - no list page, history read or emit starts after `sweepBudgetMs` (150 s): the sweep then ends
//   incomplete, arms the alarm no later than the earliest due time it saw, and answers 503 so the
//   Broker redelivers the ping;
// - history reads are a bonus, never the cost of the sweep: at most SWEEP_HISTORY_MAX_READS, none
//   after a fifth of the budget, and none after the first one that failed transiently (the time
//   rule covers those AGs); every page is still evaluated;
// - the clock is read per page, so a slow sweep does not decide with a stale `now`; the budget is
//   measured on the monotonic clock, so a wall-clock step neither stretches nor cuts it;
// - an incomplete sweep keeps where it stopped (sweep-resume.ts): the redelivery of the same ping
//   on this replica lists from the first page not yet fully acted on; an expired continue token
//   (410) starts over from the first page (docs/adr/0057);
// - a revision whose previous version the process already read costs no request and no budget
//   (shared/recovery/previous-versions.ts).

import type { ArtifactGenerator } from '../../shared/core/objects/types.js';
import type { ListPage } from '../../shared/kube/port.js';
import { DEFAULT_SWEEP_PAGE_SIZE } from '../../shared/runtime/env.js';
import type { Logger } from '../../shared/runtime/logger.js';
import {
  handled,
  outcomeForError,
  retryLater,
  type Outcome,
} from '../../shared/runtime/outcome.js';
import { EmitError } from '../../shared/runtime/outcome.js';
import { readLostWriteSignal, type HistoryReading } from '../../shared/recovery/ag-history.js';
import { needsHistory, NO_SIGNALS } from '../../shared/core/index.js';
import type { DetectDeps } from './deps.js';
import { isKubeError } from '../../shared/kube/errors.js';
import { errorSummary } from '../../shared/runtime/function-app.js';
import { emitAction } from './emit-action.js';
import { evaluate, type Evaluation } from './evaluate.js';
import type { SweepPosition } from './sweep-resume.js';
import { COVERED_BY_REDELIVERY, COVERED_BY_RESYNC } from './follow-up-cover.js';
import { formatTimeNano } from '../../shared/core/codecs/time.js';

/** The sweep's page size unless SWEEP_PAGE_SIZE says otherwise (config.sweepPageSize). */
export const SWEEP_PAGE_SIZE = DEFAULT_SWEEP_PAGE_SIZE;
/** History reads per sweep at the most. */
export const SWEEP_HISTORY_MAX_READS = 100;
/** History reads stop after this share of the sweep's budget. */
export const SWEEP_HISTORY_BUDGET_SHARE = 0.2;

const SKIPPED: HistoryReading = Object.freeze({ signals: NO_SIGNALS, gap: 'skipped' });

/** What one sweep has spent so far. */
interface Spend {
  readonly startedAt: number;
  historyReads: number;
  /** A history read failed transiently: the rest of this sweep skips history. */
  historyTrouble: boolean;
}

/**
 * Sweeps every AG. `resumeKey` names the delivery (the ping's source and id): an incomplete sweep
 * keeps its position under it, and a redelivery under the same key resumes there.
 */
export async function sweep(log: Logger, deps: DetectDeps, resumeKey?: string): Promise<Outcome> {
  const budgetMs = deps.config.sweepBudgetMs;
  const clock = deps.clock;
  const spend: Spend = { startedAt: clock.monotonicMs(), historyReads: 0, historyTrouble: false };
  const elapsed = (): number => clock.monotonicMs() - spend.startedAt;
  const resumed =
    resumeKey !== undefined ? deps.sweepResumes.take(resumeKey, clock.monotonicMs()) : undefined;
  let earliest: number | null = resumed?.earliest ?? null;
  let listed = resumed?.listed ?? 0;
  let emitted = 0;
  let emitFailures = 0;
  let emitsSkipped = 0;
  let repeatsSkipped = 0;
  let pages = 0;
  let restarted = false;
  let incomplete: 'budget' | 'list-failed' | undefined;
  let continueToken: string | undefined = resumed?.continueToken;
  // Every namespace in one list, or each of RECOVERY_NAMESPACES in turn (knative/overlays/scoped).
  const scopes: readonly (string | undefined)[] = deps.config.namespaces ?? [undefined];
  let scope = resumed?.scope ?? 0;
  // Where a redelivery would go on: after the last page of an unbroken run of pages fully acted on
  // (every action sent), from this delivery's start.
  let settled: SweepPosition | undefined = resumed;
  let unbroken = true;
  for (;;) {
    if (elapsed() >= budgetMs) {
      incomplete = 'budget';
      break;
    }
    // One page at a time: a request for the next page made while this one is evaluated competed
    // with the API server for the same CPUs and made the sweep slower, not faster (P6, ADR 0027).
    let page: ListPage<ArtifactGenerator>;
    try {
      const namespace = scopes[scope];
      page = await deps.kube.listArtifactGenerators({
        limit: deps.config.sweepPageSize,
        ...(namespace !== undefined ? { namespace } : {}),
        ...(continueToken !== undefined ? { continueToken } : {}),
      });
    } catch (e) {
      if (!isKubeError(e)) throw e;
      if (continueToken !== undefined && e.statusCode === 410 && !restarted) {
        // The continue token expired (compacted): what it pinned is gone. Start over.
        log.warn({ err: errorSummary(e), listed }, 'sweep continue token expired; starting over');
        restarted = true;
        continueToken = undefined;
        scope = 0;
        earliest = null;
        listed = 0;
        settled = undefined;
        unbroken = true;
        continue;
      }
      log.warn({ err: errorSummary(e), listed }, 'sweep list failed');
      incomplete = 'list-failed';
      break;
    }
    pages++;
    const pageFaults = emitFailures + emitsSkipped;
    continueToken = page.continueToken;
    const now = deps.clock.now();
    for (const ag of page.items) {
      listed++;
      let evaluation: Evaluation = evaluate(ag, now, deps);
      if (needsHistory(evaluation.decision)) {
        // A stall whose event was lost: its history may still show the lost write.
        const agLog = log.child({ namespace: ag.metadata?.namespace, name: ag.metadata?.name });
        // A revision read before is kept by the process and costs no request: no budget for it.
        const kept = isKept(ag, deps);
        if (kept || historyAllowed(spend, elapsed(), budgetMs)) {
          if (!kept) spend.historyReads++;
          const reading = await readLostWriteSignal(deps.previousVersions, ag, agLog);
          deps.notices.reportGap(reading, agLog);
          if (reading.gap === 'transient') spend.historyTrouble = true;
          if (reading.signals.lostWrite) evaluation = evaluate(ag, now, deps, reading.signals);
        } else {
          deps.notices.reportGap(SKIPPED, agLog);
        }
      }
      if (evaluation.nextCheck !== null && (earliest === null || evaluation.nextCheck < earliest)) {
        earliest = evaluation.nextCheck;
      }
      if (evaluation.action === undefined) continue;
      if (elapsed() >= budgetMs) {
        // Past the budget: the rest of this page is still evaluated (no I/O, it gives the alarm
        // its earliest due time), but nothing more is sent.
        incomplete = 'budget';
        emitsSkipped++;
        continue;
      }
      try {
        const sent = await emitAction(
          ag,
          evaluation,
          now,
          deps,
          log.child({ namespace: ag.metadata?.namespace, name: ag.metadata?.name }),
        );
        if (sent) emitted++;
        else repeatsSkipped++;
      } catch (e) {
        if (!(e instanceof EmitError)) throw e;
        emitFailures++;
      }
    }
    if (unbroken && emitFailures + emitsSkipped === pageFaults && continueToken !== undefined) {
      settled = { continueToken, earliest, listed, ...(deps.config.namespaces ? { scope } : {}) };
    } else {
      unbroken = false;
    }
    if (incomplete !== undefined) break;
    if (continueToken === undefined && ++scope >= scopes.length) break;
  }

  const summary = {
    listed,
    emitted,
    emitFailures,
    emitsSkipped,
    repeatsSkipped,
    historyReads: spend.historyReads,
    earliestDue: earliest,
    elapsedMs: Math.round(elapsed()),
    pages,
    resumed: resumed !== undefined,
    restarted,
  };
  // Any answer but 200 is redelivered: keep where the redelivery can go on (nothing to keep when
  // the first page of this delivery was not fully acted on).
  const keep = (): void => {
    if (resumeKey !== undefined && settled !== undefined) {
      deps.sweepResumes.keep(resumeKey, settled, clock.monotonicMs());
    }
  };
  if (incomplete !== undefined) {
    // The AGs not evaluated may be due sooner than anything seen: the alarm may only move earlier,
    // and the Broker's redelivery of this ping (503) sweeps again.
    if (earliest !== null) {
      try {
        await deps.followUps.ensureBy(earliest, log);
      } catch (e) {
        if (!isKubeError(e)) throw e;
        notArmed(log, e, earliest);
      }
    }
    keep();
    log.warn({ ...summary, incomplete }, 'sweep incomplete');
    return retryLater(`sweep-${incomplete}`);
  }
  try {
    await deps.followUps.settle(earliest, log);
  } catch (e) {
    if (!isKubeError(e)) throw e;
    // Everything due was emitted; only the alarm is not where it should be. The redelivery of
    // this ping sweeps again and settles it; the next resync does in any case.
    notArmed(log, e, earliest);
    if (emitFailures > 0) keep();
    log.warn(summary, 'sweep done; alarm not settled');
    return outcomeForError(e);
  }
  log.info(summary, 'sweep done');
  if (emitFailures > 0) {
    keep();
    return retryLater('emit-failed');
  }
  return handled('swept');
}

/**
 * The sweep answers 5xx after this: its redelivery covers the follow-up when the failure is
 * transient; the resync does in any case (follow-up-cover.ts).
 */
function notArmed(log: Logger, e: unknown, due: number | null): void {
  const transient = isKubeError(e, 'Transient') || isKubeError(e, 'Conflict');
  log.warn(
    {
      err: errorSummary(e),
      ...(due !== null ? { due: formatTimeNano(due) } : {}),
      coveredBy: transient ? COVERED_BY_REDELIVERY : COVERED_BY_RESYNC,
    },
    'follow-up not armed',
  );
}

function isKept(ag: ArtifactGenerator, deps: DetectDeps): boolean {
  const m = ag.metadata;
  if (m?.namespace === undefined || m.name === undefined || m.resourceVersion === undefined) {
    return false;
  }
  return deps.previousVersions.known({ namespace: m.namespace, name: m.name }, m.resourceVersion);
}

function historyAllowed(spend: Spend, elapsedMs: number, budgetMs: number): boolean {
  return (
    !spend.historyTrouble &&
    spend.historyReads < SWEEP_HISTORY_MAX_READS &&
    elapsedMs < budgetMs * SWEEP_HISTORY_BUDGET_SHARE
  );
}
