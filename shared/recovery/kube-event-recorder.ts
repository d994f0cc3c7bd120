// Writes the Kubernetes Event of a recovery step, best effort (docs/adr/0033-kubernetes-events.md).
// The step has already happened when this runs: its result never changes the function's answer.
// The verdict also writes an Event regarding the PackageSource (in `default`).
// create; on AlreadyExists (another replica, or a redelivery, reported the same step) read the
// Event and bump its series with a precondition. Each request has its own short deadline. A
// failure is logged at warn once per recorder, and a recorder lives for one handled CloudEvent.
// With `owed` (force-drift), an Event that failed on a transient error is kept as owed: its
// delivery answers 503 and the redelivery writes it (owed-kube-events.ts, docs/adr/0061).

import {
  buildEvents,
  nextSeries,
  subjectOf,
  type ArtifactGenerator,
  type EventStep,
  type KubeEvent,
} from '../core/index.js';
import { isKubeError } from '../kube/errors.js';
import { AGAIN, redecide } from '../kube/redecide.js';
import type { KubePort } from '../kube/port.js';
import type { Clock } from '../runtime/clock.js';
import type { FunctionConfig } from '../runtime/env.js';
import type { Logger } from '../runtime/logger.js';
import type { OwedEvents } from './owed-kube-events.js';

/**
 * `failed`: a transient failure (timeout, 429, 5xx, reset), which a later try may overcome (kept
 * as owed when the recorder has `owed`); `refused`: 401/403/4xx, our misconfiguration.
 */
export type EventWriteResult =
  'created' | 'series-bumped' | 'bound' | 'not-reportable' | 'contended' | 'failed' | 'refused';

export type RecordEvent = (ag: ArtifactGenerator, step: EventStep) => Promise<EventWriteResult>;

/** A recorder that also says whether any of its writes was kept as owed (docs/adr/0061). */
export type EventRecorder = RecordEvent & { readonly owes: () => boolean };

export interface EventRecorderDeps {
  readonly kube: KubePort;
  readonly clock: Clock;
  readonly config: Pick<FunctionConfig, 'events'>;
}

/** create / read+patch rounds before a contended series bump is dropped. */
const ROUNDS = 3;

export function createEventRecorder(
  deps: EventRecorderDeps,
  log: Logger,
  owed?: OwedEvents,
): EventRecorder {
  let warned = false;
  let kept = false;
  const opts = { timeoutMs: deps.config.events.writeTimeoutMs };

  /** create, or on AlreadyExists read and bump the series; never throws. */
  const write = async (event: KubeEvent, now: number, agKey: string): Promise<EventWriteResult> => {
    const result = await writeOnce(event, now);
    if (result === 'failed' && owed !== undefined) {
      owed.owe(agKey, { event, since: now }, log);
      kept = true;
    } else if (result !== 'not-reportable') {
      owed?.settled(event.metadata.name);
    }
    return result;
  };

  const writeOnce = async (event: KubeEvent, now: number): Promise<EventWriteResult> => {
    const { namespace, name } = event.metadata;
    try {
      return await redecide<EventWriteResult>(
        async () => {
          try {
            await deps.kube.createEvent(event, opts);
            return 'created';
          } catch (e) {
            if (!isKubeError(e, 'Conflict')) throw e;
          }
          let existing;
          try {
            existing = await deps.kube.getEvent(namespace, name, opts);
          } catch (e) {
            if (isKubeError(e, 'NotFound')) return AGAIN; // expired in between: create it again
            throw e;
          }
          const next = nextSeries(existing, now);
          if (next.kind === 'skip') return next.why === 'bound' ? 'bound' : 'contended';
          const rv = existing.metadata?.resourceVersion;
          try {
            await deps.kube.patchEventSeries(namespace, name, next.series, {
              ...opts,
              ...(rv !== undefined ? { resourceVersion: rv } : {}),
            });
            return 'series-bumped';
          } catch (e) {
            if (!isKubeError(e, 'Conflict') && !isKubeError(e, 'NotFound')) throw e;
            return AGAIN;
          }
        },
        {
          rounds: ROUNDS,
          exhausted: () => {
            log.debug(
              { event: name, namespace, reason: event.reason },
              'Kubernetes Event contended; dropped',
            );
            return 'contended';
          },
        },
      );
    } catch (e) {
      const fields = {
        event: name,
        namespace,
        regarding: event.regarding.kind,
        reason: event.reason,
        kind: isKubeError(e) ? e.kind : 'Unexpected',
        statusCode: isKubeError(e) ? e.statusCode : undefined,
        err: { message: e instanceof Error ? e.message : String(e) },
        // Kept for the redelivery to write (docs/adr/0061), or lost.
        owed: owed !== undefined && retryable(e),
      };
      if (!warned) {
        warned = true;
        log.warn(fields, 'could not write Kubernetes Event');
      } else {
        log.debug(fields, 'could not write Kubernetes Event');
      }
      return retryable(e) ? 'failed' : 'refused';
    }
  };
  const record: RecordEvent = async (ag, step) => {
    const subject = subjectOf(ag);
    if (subject === null) return 'not-reportable';
    const now = deps.clock.now();
    let events: KubeEvent[];
    try {
      events = buildEvents(step, subject, deps.config.events.reportingInstance, now);
    } catch {
      return 'not-reportable'; // a time no Event can carry (outside years 0000..9999)
    }
    // The verdict's two Events (the AG's, the PackageSource's) are written side by side, each
    // with its own deadline; the AG's result is the answer, unless either failed (then owed).
    const agKey = `${subject.namespace}/${subject.name}`;
    const results = await Promise.all(events.map((e) => write(e, now, agKey)));
    if (results.includes('failed')) return 'failed';
    return results[0] ?? 'not-reportable';
  };
  return Object.assign(record, { owes: () => kept });
}

/** A failure a later try may overcome: not our misconfiguration (401/403, 4xx). */
function retryable(e: unknown): boolean {
  return !isKubeError(e, 'Forbidden') && !isKubeError(e, 'Invalid');
}
