// Owed Kubernetes Events (docs/adr/0061-owed-events.md): the Events of recovery steps that could
// not be written, and the writes that pay them on a later delivery for the same AG.
//
// What is owed comes from two places. The process that failed keeps the exact Event (bounded
// memory, an optimisation like the kept history): its redelivery on this replica writes that same
// object. Any process can also name the step from the AG (a finished force that the action asked
// for, shared/core/kube-events/owed.ts): a redelivery on another replica, or after a restart, writes
// it from there. Every owed write is a create: an Event of that name already there means it was
// written (by us, another replica, or the write whose answer was lost), and nothing more is sent,
// so an owed Event is written once. Past OWED_EVENT_MAX_AGE_MS it is dropped with a warn line.

import {
  askedStepOnAg,
  buildEvents,
  owedEventDue,
  type ArtifactGenerator,
  type KubeEvent,
} from '../core/index.js';
import { isKubeError } from '../kube/errors.js';
import type { KubePort } from '../kube/port.js';
import type { Clock } from '../runtime/clock.js';
import type { FunctionConfig } from '../runtime/env.js';
import { subjectOf } from '../core/kube-events/vocabulary.js';
import type { Logger } from '../runtime/logger.js';
import type { Metrics } from '../runtime/metrics.js';
import { handled, retryLater, type Outcome } from '../runtime/outcome.js';

/** Owed Events kept by a process at the most; the oldest is dropped (with a warn line) beyond. */
export const OWED_EVENTS_MAX = 256;
/** Names of Events this process settled (wrote, or was refused), so that it does not try again. */
export const WRITTEN_EVENTS_MAX = 1024;

export interface OwedEvent {
  readonly event: KubeEvent;
  /** When the step happened (or its Event first failed): the owed window runs from here. */
  readonly since: number;
}

export interface OwedEvents {
  /**
   * The Event about the AG `agKey` (namespace/name) could not be written; `again` when it was owed
   * already (a later try failed too).
   */
  owe(agKey: string, owed: OwedEvent, log: Logger, again?: boolean): void;
  /** Nothing is owed for the Event `name`: written (here or found written), or refused (403). */
  settled(name: string): void;
  isSettled(name: string): boolean;
  /** The Events owed about `agKey` (every AG: null), taken out of memory. */
  take(agKey: string | null): (OwedEvent & { readonly agKey: string })[];
  /**
   * The delivery `id` (a CloudEvent id; a redelivery keeps it) about `agKey` (every AG: null) had
   * done its step, answered `result`, and answered 503 `event-owed` for its Events only.
   */
  answeredOwed(id: string, answer: OwedAnswer): void;
  /** What `answeredOwed` remembered of the delivery `id`, taken out of memory. */
  takeAnswer(id: string): OwedAnswer | undefined;
}

export interface OwedAnswer {
  readonly agKey: string | null;
  readonly result: string;
}

/** Drops, when the process keeps more than it may, count in `metrics` (`dropped`). */
export function createOwedEvents(metrics?: Metrics): OwedEvents {
  // Insertion order is age order: the first key is the oldest.
  const owed = new Map<string, OwedEvent & { agKey: string }>();
  const written = new Set<string>();
  const answers = new Map<string, OwedAnswer>();
  return {
    owe(agKey, o, log, again = false) {
      const name = o.event.metadata.name;
      if (!again) metrics?.owedEvent('owed');
      owed.delete(name);
      owed.set(name, { ...o, agKey });
      while (owed.size > OWED_EVENTS_MAX) {
        const [oldest, entry] = owed.entries().next().value as [string, OwedEvent];
        owed.delete(oldest);
        logDropped(log, entry.event, 'capacity', 0);
        metrics?.owedEvent('dropped');
      }
    },
    settled(name) {
      owed.delete(name);
      written.delete(name);
      written.add(name);
      if (written.size > WRITTEN_EVENTS_MAX) written.delete(written.values().next().value ?? '');
    },
    isSettled: (name) => written.has(name),
    take(agKey) {
      const out: (OwedEvent & { agKey: string })[] = [];
      for (const [name, entry] of owed) {
        if (agKey !== null && entry.agKey !== agKey) continue;
        owed.delete(name);
        out.push(entry);
      }
      return out;
    },
    answeredOwed(id, answer) {
      answers.delete(id);
      answers.set(id, answer);
      if (answers.size > OWED_EVENTS_MAX) answers.delete(answers.keys().next().value ?? '');
    },
    takeAnswer(id) {
      const a = answers.get(id);
      answers.delete(id);
      return a;
    },
  };
}

export interface OwedEventDeps {
  readonly kube: KubePort;
  readonly clock: Clock;
  readonly config: Pick<FunctionConfig, 'events' | 'recovery'>;
  readonly owedEvents: OwedEvents;
  readonly metrics?: Metrics;
}

/** `owed`: an Event is still owed after this delivery (a redelivery should try again). */
export type OwedSettlement = 'clear' | 'owed';

/**
 * Writes the Events owed about `ag` (as read by this delivery): those this process kept, and the
 * Event of the finished force the action asked for (`askedAttempts`, null for other actions).
 */
export async function payOwedEvents(
  ag: ArtifactGenerator,
  askedAttempts: number | null,
  deps: OwedEventDeps,
  log: Logger,
): Promise<OwedSettlement> {
  const subject = subjectOf(ag);
  if (subject === null) return 'clear';
  const agKey = `${subject.namespace}/${subject.name}`;
  const now = deps.clock.now();
  const due = kept(agKey, deps, log, now);
  const asked = askedStepOnAg(ag, now, deps.config.recovery, askedAttempts);
  if (asked.kind === 'recorded') {
    for (const event of buildEvents(
      asked.step,
      subject,
      deps.config.events.reportingInstance,
      asked.stepAt,
    )) {
      const name = event.metadata.name;
      if (deps.owedEvents.isSettled(name) || due.some((o) => o.event.metadata.name === name))
        continue;
      due.push({ event, since: asked.stepAt, agKey });
    }
  }
  return writeAll(due, deps, log, now);
}

/**
 * Writes the Events this process keeps as owed about the AG `agKey` (every AG: null). For a
 * function whose steps the AG does not name on its own (surface-stalled's verdict needs the
 * PackageSource too): what another replica owes, it alone can write.
 */
export async function payKeptEvents(
  agKey: string | null,
  deps: OwedEventDeps,
  log: Logger,
): Promise<OwedSettlement> {
  const now = deps.clock.now();
  return writeAll(kept(agKey, deps, log, now), deps, log, now);
}

/**
 * The redelivery of a delivery that answered 503 `event-owed` on this process (the same CloudEvent
 * id, about the same AG): its step is done, only its Events are owed. Writes the Events kept about
 * the AG and answers as the step did, without reading the AG or deciding again: those reads would
 * serve nothing, and under a storm they are the requests that fail (docs/adr/0061). Null when this
 * process remembers no such answer or keeps no Event for it: the delivery then runs in full.
 */
export async function answerOwedRedelivery(
  id: string,
  agKey: string | null,
  deps: OwedEventDeps,
  log: Logger,
): Promise<Outcome | null> {
  const answer = deps.owedEvents.takeAnswer(id);
  if (answer === undefined || answer.agKey !== agKey) return null;
  const taken = deps.owedEvents.take(agKey);
  if (taken.length === 0) return null;
  const now = deps.clock.now();
  if ((await writeAll(stillDue(taken, deps, log, now), deps, log, now)) === 'owed') {
    deps.owedEvents.answeredOwed(id, answer);
    return retryLater('event-owed');
  }
  return handled(answer.result);
}

/** The kept owed Events of `agKey` still due; the expired ones dropped with a warn line. */
function kept(
  agKey: string | null,
  deps: OwedEventDeps,
  log: Logger,
  now: number,
): (OwedEvent & { agKey: string })[] {
  return stillDue(deps.owedEvents.take(agKey), deps, log, now);
}

function stillDue(
  taken: readonly (OwedEvent & { agKey: string })[],
  deps: OwedEventDeps,
  log: Logger,
  now: number,
): (OwedEvent & { agKey: string })[] {
  return taken.filter((o) => {
    if (owedEventDue(o.since, now) === 'write') return true;
    logDropped(log, o.event, 'expired', now - o.since);
    deps.metrics?.owedEvent('dropped');
    return false;
  });
}

async function writeAll(
  due: readonly (OwedEvent & { agKey: string })[],
  deps: OwedEventDeps,
  log: Logger,
  now: number,
): Promise<OwedSettlement> {
  let settlement: OwedSettlement = 'clear';
  for (const o of due) {
    if ((await writeOwed(o, o.agKey, deps, log, now)) === 'owed') settlement = 'owed';
  }
  return settlement;
}

async function writeOwed(
  o: OwedEvent,
  agKey: string,
  deps: OwedEventDeps,
  log: Logger,
  now: number,
): Promise<OwedSettlement> {
  const { name, namespace } = o.event.metadata;
  const fields = {
    event: name,
    namespace,
    reason: o.event.reason,
    owedMs: Math.max(0, now - o.since),
  };
  try {
    await deps.kube.createEvent(o.event, { timeoutMs: deps.config.events.writeTimeoutMs });
    deps.owedEvents.settled(name);
    deps.metrics?.owedEvent('written');
    log.info(fields, 'owed Kubernetes Event written');
    return 'clear';
  } catch (e) {
    if (isKubeError(e, 'Conflict')) {
      // AlreadyExists: written before (by us, another replica, or a write whose answer was lost).
      deps.owedEvents.settled(name);
      deps.metrics?.owedEvent('written');
      log.debug(fields, 'owed Kubernetes Event already written');
      return 'clear';
    }
    if (isKubeError(e, 'Forbidden') || isKubeError(e, 'Invalid')) {
      // Our misconfiguration: no redelivery would write it.
      deps.owedEvents.settled(name);
      log.warn(
        { ...fields, kind: e.kind, statusCode: e.statusCode },
        'owed Kubernetes Event refused',
      );
      return 'clear';
    }
    deps.owedEvents.owe(agKey, o, log, true);
    log.debug(
      { ...fields, kind: isKubeError(e) ? e.kind : 'Unexpected' },
      'owed Kubernetes Event not written yet',
    );
    return 'owed';
  }
}

function logDropped(
  log: Logger,
  event: KubeEvent,
  why: 'expired' | 'capacity',
  ageMs: number,
): void {
  log.warn(
    {
      event: event.metadata.name,
      namespace: event.metadata.namespace,
      reason: event.reason,
      why,
      ageMs,
    },
    'owed Kubernetes Event dropped',
  );
}
