// Facts about Flux source-watcher v2.1.0 that the simulator reproduces (test/README.md, "The source-watcher simulator"). Kept here,
// not imported from the product, so the simulator stays independent of the code under test.

export const GROUP = 'source.extensions.fluxcd.io';
export const VERSION = 'v1beta1';
export const PLURAL = 'artifactgenerators';

export const FINALIZER = 'source.extensions.fluxcd.io/finalizer';
export const REQUESTED_AT_ANNOTATION = 'reconcile.fluxcd.io/requestedAt';

export const READY = 'Ready';
export const RECONCILING = 'Reconciling';

export const REASON_PROGRESSING = 'Progressing';
export const REASON_SUCCEEDED = 'Succeeded';
export const REASON_SOURCE_FETCH_FAILED = 'SourceFetchFailed';
export const REASON_BUILD_FAILED = 'BuildFailed';
/** What source-watcher writes when a reconcile fails on an API error (e.g. an etcd timeout). */
export const REASON_RECONCILIATION_FAILED = 'ReconciliationFailed';

export const MSG_IN_PROGRESS = 'Reconciliation in progress';

/** Periodic requeue after a no-drift return or a successful build. */
export const REQUEUE_INTERVAL_MS = 60 * 60 * 1000;
/** Requeue after adding the finalizer (RequeueAfter, not the rate limiter). */
export const FINALIZER_REQUEUE_MS = 1;
/** Requeue after SourceFetchFailed. */
export const SOURCE_RETRY_MS = 5 * 1000;
/** Flux controllers' default rate limiter: --min-retry-delay / --max-retry-delay. */
export const RETRY_MIN_MS = 750;
export const RETRY_MAX_MS = 15 * 60 * 1000;
/** fluxcd/pkg patch helper: conditions patch retried on Conflict, 5 steps, 100 ms x5. */
export const CONDITIONS_PATCH_STEPS = 5;
export const CONDITIONS_PATCH_BACKOFF_MS = 100;
export const CONDITIONS_PATCH_BACKOFF_FACTOR = 5;

export const DEFAULT_BUILD_TIME_MS = 1000;
export const DEFAULT_CONCURRENCY = 4;
/** The field manager of every write: source-watcher's own name (its managedFields entries). */
export const FIELD_MANAGER = 'source-watcher';

/** The pause annotation (ReconcileAnnotation) and its value, matched case-insensitively (IsDisabled). */
export const RECONCILE_ANNOTATION = 'source.extensions.fluxcd.io/reconcile';
export const DISABLED_VALUE = 'disabled';

export function isDisabled(annotations: Record<string, string> | undefined): boolean {
  const v = annotations?.[RECONCILE_ANNOTATION];
  return typeof v === 'string' && v.toLowerCase() === DISABLED_VALUE;
}
