// The sweep: list every AG page by page (not from the watch cache, which ignores `limit`), evaluate
// each like an update, emit the due actions, then program the follow-up alarm to the earliest due
// time (or remove it when nothing is due).

import type { ArtifactGenerator } from '../../shared/core/types.js';
import type { ListPage } from '../../shared/kube/port.js';
import type { Logger } from '../../shared/runtime/logger.js';
import { handled, retryLater, type Outcome } from '../../shared/runtime/outcome.js';
import { EmitError } from '../../shared/runtime/outcome.js';
import type { DetectDeps } from './deps.js';
import { isKubeError } from '../../shared/kube/errors.js';
import { errorSummary } from '../../shared/runtime/function-app.js';
import { emitAction, evaluate, readSignals, wantsHistory, type Evaluation } from './evaluate.js';

export const SWEEP_PAGE_SIZE = 500;

export async function sweep(log: Logger, deps: DetectDeps): Promise<Outcome> {
  const now = deps.clock.now();
  let earliest: number | null = null;
  let listed = 0;
  let emitted = 0;
  let emitFailures = 0;
  let continueToken: string | undefined;
  do {
    // One page at a time: a request for the next page made while this one is evaluated competed
    // with the API server for the same CPUs and made the sweep slower, not faster (P6, ADR 0027).
    const page: ListPage<ArtifactGenerator> = await deps.kube.listArtifactGenerators({
      limit: SWEEP_PAGE_SIZE,
      ...(continueToken !== undefined ? { continueToken } : {}),
    });
    continueToken = page.continueToken;
    for (const ag of page.items) {
      listed++;
      let evaluation: Evaluation = evaluate(ag, now, deps);
      if (wantsHistory(ag, evaluation, deps)) {
        // A stall whose event was lost: its history may still show the lost write.
        const agLog = log.child({ namespace: ag.metadata?.namespace, name: ag.metadata?.name });
        try {
          const signals = await readSignals(ag, deps, agLog);
          if (signals.lostWrite) evaluation = evaluate(ag, now, deps, signals);
        } catch (e) {
          if (!isKubeError(e)) throw e;
          // The time rule still covers this AG; one failed read does not fail the sweep.
          agLog.warn({ err: errorSummary(e) }, 'history read failed');
        }
      }
      if (evaluation.nextCheck !== null && (earliest === null || evaluation.nextCheck < earliest)) {
        earliest = evaluation.nextCheck;
      }
      if (evaluation.action === undefined) continue;
      try {
        await emitAction(
          ag,
          evaluation,
          now,
          deps,
          log.child({ namespace: ag.metadata?.namespace, name: ag.metadata?.name }),
        );
        emitted++;
      } catch (e) {
        if (!(e instanceof EmitError)) throw e;
        emitFailures++;
      }
    }
  } while (continueToken !== undefined);

  await deps.followUps.settle(earliest, log);
  log.info({ listed, emitted, emitFailures, earliestDue: earliest }, 'sweep done');
  return emitFailures > 0 ? retryLater('emit-failed') : handled('swept');
}
