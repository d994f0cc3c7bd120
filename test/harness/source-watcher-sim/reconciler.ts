// One source-watcher v2.1.0 reconcile of one ArtifactGenerator, step by step (test/README.md, "The source-watcher simulator"):
// 1 finalizer, (paused: nothing more), 2 sources, 3 drift check, 4 in-progress patch + build,
// 5 outcome, 6 lastHandledReconcileAt + final patch (always, also when paused).

import type { AgApi } from './ag-api.js';
import { removeCondition, setCondition, type ConditionUpdate } from './conditions.js';
import {
  FINALIZER,
  FINALIZER_REQUEUE_MS,
  isDisabled,
  MSG_IN_PROGRESS,
  READY,
  REASON_BUILD_FAILED,
  REASON_PROGRESSING,
  REASON_RECONCILIATION_FAILED,
  REASON_SOURCE_FETCH_FAILED,
  REASON_SUCCEEDED,
  RECONCILING,
  REQUESTED_AT_ANNOTATION,
  REQUEUE_INTERVAL_MS,
  SOURCE_RETRY_MS,
} from './constants.js';
import { buildInventory, sourcesDigest } from './digests.js';
import { detectDrift, type DriftReason } from './drift.js';
import { EaApplyError, externalArtifactsMatch, type EaApi } from './ea-api.js';
import { httpStatusOf } from './ag-api.js';
import { clone } from './json.js';
import type { Knobs } from './knobs.js';
import { SerialPatcher } from './serial-patcher.js';
import { StoppedError } from './stopped.js';
import { splitKey, type AgKey, type SimAg, type SimCondition } from './types.js';

export type ReconcileOutcome =
  | 'NotFound'
  | 'Finalized'
  | 'FinalizerAdded'
  | 'Disabled'
  | 'SourceFetchFailed'
  | 'NoDrift'
  | 'InProgressPatchFailed'
  | 'Built'
  | 'BuildFailed'
  | 'ReconciliationFailed';

export interface ReconcileResult {
  outcome: ReconcileOutcome;
  drift?: DriftReason;
  /** Requeue after this many virtual ms (forgets the key's failures). */
  requeueAfterMs?: number;
  /** Any error makes the controller requeue through the rate limiter. */
  error?: Error;
  /** Some conditions request of this reconcile was dropped by fault injection. */
  lostConditions: boolean;
}

export interface ReconcilerDeps {
  api: AgApi;
  /** The ExternalArtifacts it generates; absent: none are written (the knob stands in). */
  eas?: EaApi;
  knobs: Knobs;
  /** Fault injection: whether this conditions request is lost (counts it when it is). */
  loseConditions(key: AgKey, setsVerdict: boolean): boolean;
  /** A verdict's conditions request failed at the API server (not injected). */
  verdictFailed?(key: AgKey): void;
  /** Virtual epoch ms. */
  now(): number;
  /** Virtual-time sleep; rejects with StoppedError when the simulator stops. */
  sleep(ms: number): Promise<void>;
  /** Throws StoppedError when the simulator has stopped. */
  guard(): void;
}

function aggregate(errors: Error[], context: string): Error | undefined {
  if (errors.length === 0) return undefined;
  if (errors.length === 1 && errors[0]) return errors[0];
  return new AggregateError(errors, `${context}: ${errors.map((e) => e.message).join('; ')}`);
}

function conditionsOf(obj: SimAg): SimCondition[] {
  obj.status ??= {};
  obj.status.conditions ??= [];
  return obj.status.conditions;
}

function sourceMissingMessage(obj: SimAg): string {
  const first: unknown = obj.spec?.sources?.[0];
  const s = (first && typeof first === 'object' ? first : {}) as Record<string, unknown>;
  const kind = typeof s.kind === 'string' ? s.kind : 'source';
  const ns = typeof s.namespace === 'string' ? s.namespace : obj.metadata.namespace;
  const name = typeof s.name === 'string' ? s.name : '<unnamed>';
  return `get sources failed: ${kind} '${ns}/${name}' not found`;
}

export async function reconcile(deps: ReconcilerDeps, key: AgKey): Promise<ReconcileResult> {
  const { api, knobs } = deps;
  deps.guard();
  const { namespace, name } = splitKey(key);
  const original = await api.get(namespace, name);
  deps.guard();
  if (!original) return { outcome: 'NotFound', lostConditions: false };

  const obj = clone(original);
  let honestFailure = false;
  const patcher = new SerialPatcher(
    {
      api,
      key,
      // An honest failure's Ready write lands (it is the point of the knob).
      loseConditions: (setsVerdict) => !honestFailure && deps.loseConditions(key, setsVerdict),
      verdictFailed: () => deps.verdictFailed?.(key),
      sleep: (ms) => deps.sleep(ms),
      guard: () => deps.guard(),
    },
    original,
  );
  let lostConditions = false;
  const patch = async (): Promise<Error[]> => {
    const out = await patcher.patch(obj);
    lostConditions ||= out.lostConditions;
    return out.errors;
  };
  const generation = obj.metadata.generation ?? 0;
  const set = (update: Omit<ConditionUpdate, 'observedGeneration'>): void =>
    setCondition(conditionsOf(obj), { ...update, observedGeneration: generation }, deps.now());
  const markInProgress = (): void => {
    set({
      type: RECONCILING,
      status: 'True',
      reason: REASON_PROGRESSING,
      message: MSG_IN_PROGRESS,
    });
    set({ type: READY, status: 'Unknown', reason: REASON_PROGRESSING, message: MSG_IN_PROGRESS });
  };

  // Being deleted: drop the finalizer (artifacts are garbage collected), nothing else.
  if (obj.metadata.deletionTimestamp) {
    const finalizers = obj.metadata.finalizers ?? [];
    if (!finalizers.includes(FINALIZER)) return { outcome: 'Finalized', lostConditions };
    obj.metadata.finalizers = finalizers.filter((f) => f !== FINALIZER);
    const error = aggregate(await patch(), `finalize ${key}`);
    return { outcome: 'Finalized', lostConditions, ...(error ? { error } : {}) };
  }

  let result: Omit<ReconcileResult, 'lostConditions'>;
  if (!(obj.metadata.finalizers ?? []).includes(FINALIZER)) {
    // Step 1: add the finalizer, mark progressing, requeue at once (not rate-limited: the
    // recorded source-watcher started the build within milliseconds of the finalizer patch).
    obj.metadata.finalizers = [...(obj.metadata.finalizers ?? []), FINALIZER];
    markInProgress();
    result = { outcome: 'FinalizerAdded', requeueAfterMs: FINALIZER_REQUEUE_MS };
  } else if (isDisabled(obj.metadata.annotations)) {
    // Paused (the reconcile annotation): no drift check, no build, no requeue; the deferred
    // status patch below still records a requestedAt as handled.
    result = { outcome: 'Disabled' };
  } else {
    result = await reconcileSources(obj);
  }

  // Step 6: always record the handled request and patch.
  const requestedAt = obj.metadata.annotations?.[REQUESTED_AT_ANNOTATION];
  if (requestedAt !== undefined) {
    obj.status ??= {};
    obj.status.lastHandledReconcileAt = requestedAt;
  }
  const finalErrors = await patch();
  const errors = [...(result.error ? [result.error] : []), ...finalErrors];
  const error = aggregate(errors, `reconcile ${key}`);
  const { error: _ignored, ...rest } = result;
  return { ...rest, lostConditions, ...(error ? { error } : {}) };

  async function reconcileSources(ag: SimAg): Promise<Omit<ReconcileResult, 'lostConditions'>> {
    // Step 2: sources.
    if (knobs.sourceMissing.has(key)) {
      set({
        type: READY,
        status: 'False',
        reason: REASON_SOURCE_FETCH_FAILED,
        message: sourceMissingMessage(ag),
      });
      return { outcome: 'SourceFetchFailed', requeueAfterMs: SOURCE_RETRY_MS };
    }
    const digest = sourcesDigest(ag, knobs.revisionOf(key));

    // Step 3: drift check. No drift: return, no condition touched.
    let drift = detectDrift(ag, digest, {
      artifactMissing: knobs.artifactMissing.has(key),
    });
    // The last check (detectExternalArtifactsDrift): the objects labelled with the AG's uid must
    // match the inventory. It runs only when a reconcile is asked for: nothing watches them.
    if (drift === undefined && deps.eas && ag.metadata.uid) {
      const eas = await deps.eas.listFor(namespace, ag.metadata.uid);
      deps.guard();
      if (!externalArtifactsMatch(ag.status?.inventory ?? [], eas))
        drift = 'ExternalArtifactsDiffer';
    }
    if (drift === undefined) return { outcome: 'NoDrift', requeueAfterMs: REQUEUE_INTERVAL_MS };

    // Step 4: intermediate patch, then build.
    markInProgress();
    const inProgressError = aggregate(await patch(), `in-progress patch of ${key}`);
    if (inProgressError) return { outcome: 'InProgressPatchFailed', drift, error: inProgressError };
    await deps.sleep(knobs.buildTimeOf(key));
    deps.guard();

    // Step 5: outcome.
    const buildFailed = (
      reason: string,
      message: string,
      error: string,
    ): Omit<ReconcileResult, 'lostConditions'> => {
      set({ type: READY, status: 'False', reason, message });
      return { outcome: 'BuildFailed', drift, error: new Error(error) };
    };
    if (knobs.takeBuild(key, ag.metadata.annotations?.[REQUESTED_AT_ANNOTATION])) {
      honestFailure = true;
      return buildFailed(
        REASON_RECONCILIATION_FAILED,
        'reconciliation failed: etcdserver: request timed out',
        `reconcile of ${key} failed (simulated API error)`,
      );
    }
    if (knobs.buildFailure.has(key)) {
      return buildFailed(
        REASON_BUILD_FAILED,
        'build failed: simulated build failure',
        `build of ${key} failed (simulated)`,
      );
    }
    const inventory = buildInventory(ag, digest);
    // Apply the ExternalArtifacts before the verdict and the inventory are written: for a moment
    // the objects differ from the inventory on the AG (the order an honest build writes in).
    if (deps.eas && ag.metadata.uid) {
      const gen = { namespace, name, uid: ag.metadata.uid };
      try {
        for (const entry of inventory) {
          await deps.eas.applyEntry(gen, entry, knobs.revisionOf(key), deps.now());
          deps.guard();
        }
        const kept = new Set(inventory.map((e) => `${e.namespace}/${e.name}`));
        for (const old of ag.status?.inventory ?? []) {
          if (!kept.has(`${old.namespace}/${old.name}`))
            await deps.eas.remove(old.namespace, old.name);
        }
      } catch (e) {
        if (e instanceof StoppedError) throw e;
        const code = e instanceof EaApplyError ? e.code : httpStatusOf(e);
        set({
          type: READY,
          status: 'False',
          reason: REASON_RECONCILIATION_FAILED,
          message:
            e instanceof EaApplyError
              ? e.message
              : `garbage collection failed: ${e instanceof Error ? e.message : String(e)}`,
        });
        return {
          outcome: 'ReconciliationFailed',
          drift,
          error: new Error(`apply ExternalArtifacts of ${key} failed (HTTP ${code ?? '?'})`),
        };
      }
    }
    ag.status ??= {};
    ag.status.inventory = inventory;
    ag.status.observedSourcesDigest = digest;
    const n = ag.status.inventory.length;
    set({
      type: READY,
      status: 'True',
      reason: REASON_SUCCEEDED,
      message: `reconciliation succeeded, generated ${n} artifact(s)`,
    });
    removeCondition(conditionsOf(ag), RECONCILING);
    knobs.artifactMissing.delete(key);
    return { outcome: 'Built', drift, requeueAfterMs: REQUEUE_INTERVAL_MS };
  }
}
