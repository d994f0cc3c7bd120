// The recovery's metrics port (docs/adr/0059-otlp-metrics.md): one method per thing an operator
// counts, each with a bounded label set (an AG's namespace and name as Flux's gotk_* metrics have
// them, a closed list of reasons; never a CloudEvent id or a message). A function gets it in its
// deps; `noopMetrics` when no OTLP endpoint is configured (no export, no SDK loaded, no cost).
// The OpenTelemetry implementation lives in metrics-otel.ts and is imported only when exporting.

import type { KubeErrorKind } from '../kube/errors.js';

/** How a stall was found: the lost-write signal (early detection) or the time rule. */
export type StallHow = 'lost-write' | 'time-rule';

/** Deliveries a function refused: a forged owner, an unauthenticated sender, a policy denial. */
export type RefusalReason = 'forged-owner' | 'unauthenticated' | 'policy-denied';

/** What a stall ended in. */
export type StallOutcome = 'recovered' | 'stalled';

/**
 * What became of a Kubernetes Event that could not be written (docs/adr/0061): `owed` when its
 * write first failed, `written` when a later delivery wrote it (or found it written), `dropped`
 * when it was given up (too old, or beyond the process's bound).
 */
export type OwedEventOutcome = 'owed' | 'written' | 'dropped';

/** A delivery's outcome, from the HTTP status the function answered. */
export type DeliveryOutcome = 'ok' | 'retry' | 'rejected' | 'dead-letter';

export interface AgLabels {
  readonly namespace: string;
  readonly name: string;
}

export interface Metrics {
  /** A stall found (detect emitted the first force action for it). */
  stallFound(ag: AgLabels, how: StallHow): void;
  /** A force written (force-drift), by attempt (1..5; higher ones count as "6+"). */
  forced(ag: AgLabels, attempt: number): void;
  /** A tracked AG became Ready again; `stalledSeconds` from the first force, when known. */
  recovered(ag: AgLabels, stalledSeconds: number | undefined): void;
  /** The verdict SourceWatcherStalled surfaced; `stalledSeconds` from the first force. */
  verdict(ag: AgLabels, stalledSeconds: number | undefined): void;
  /** An ExternalArtifact drift healed. */
  externalArtifactHealed(ag: AgLabels): void;
  /** A delivery refused for `reason`. */
  refused(reason: RefusalReason): void;
  /** Seconds from the lost write (its signal) to the first force written for it. */
  lostWriteToForce(seconds: number): void;
  /** Early detection could not run for `cause` (the time rule still holds). */
  earlyDetectionDegraded(cause: string): void;
  /** An API server call failed with `errorClass` (NotFound, Conflict, Forbidden, Transient, ...). */
  apiError(errorClass: string): void;
  /** A delivery ended with `outcome` (the function's name is the resource's service.name). */
  delivery(outcome: DeliveryOutcome): void;
  /** An owed Kubernetes Event's fate (force-drift, surface-stalled). */
  owedEvent(outcome: OwedEventOutcome): void;
  /**
   * Export what was recorded, soon (a delivery ended: within a second, one export for every
   * delivery ending meanwhile); resolves when sent or failed, never throws.
   */
  flush(): Promise<void>;
  /** Export now and stop (SIGTERM). */
  shutdown(): Promise<void>;
}

const nothing = (): void => {};
const resolved = (): Promise<void> => Promise.resolve();

/** Records nothing: the metrics of a function with no OTLP endpoint. */
export const noopMetrics: Metrics = {
  stallFound: nothing,
  forced: nothing,
  recovered: nothing,
  verdict: nothing,
  externalArtifactHealed: nothing,
  refused: nothing,
  lostWriteToForce: nothing,
  earlyDetectionDegraded: nothing,
  apiError: nothing,
  delivery: nothing,
  owedEvent: nothing,
  flush: resolved,
  shutdown: resolved,
};

/** The attempt label: "1".."5", then "6+" (bounded). */
export function attemptLabel(attempt: number): string {
  if (!Number.isInteger(attempt) || attempt < 1) return '0';
  return attempt <= 5 ? String(attempt) : '6+';
}

/** The delivery outcome of an HTTP status a function answered. */
export function deliveryOutcome(status: number, deadLettered: boolean): DeliveryOutcome {
  if (deadLettered) return 'dead-letter';
  if (status < 300) return 'ok';
  if (status === 429 || status >= 500) return 'retry';
  return 'rejected';
}

/** The causes of degraded early detection that become labels; anything else is "other". */
const DEGRADED_CAUSES = new Set([
  'compacted',
  'not-comparable',
  'not-found',
  'refused',
  'forbidden',
  'transient',
  'skipped',
]);

export function degradedCauseLabel(cause: string): string {
  return DEGRADED_CAUSES.has(cause) ? cause : 'other';
}

/** Error classes that become labels: the typed Kubernetes errors' kinds; anything else is "other". */
const ERROR_CLASSES: ReadonlySet<string> = new Set<KubeErrorKind>([
  'NotFound',
  'Conflict',
  'Invalid',
  'Forbidden',
  'Transient',
]);

export function errorClassLabel(errorClass: string): string {
  return ERROR_CLASSES.has(errorClass) ? errorClass : 'other';
}

/**
 * Whether a failed write is an admission policy's denial (docs/adr/0055): the API server answers
 * Forbidden (or Invalid, for a validation whose reason says so) naming the ValidatingAdmissionPolicy.
 * An RBAC Forbidden, a schema Invalid or a webhook's answer is not.
 */
export function isPolicyDenial(kind: string, message: string): boolean {
  return (
    (kind === 'Forbidden' || kind === 'Invalid') &&
    /\bValidatingAdmissionPolicy '[^']*' .*\bdenied request\b/.test(message)
  );
}
