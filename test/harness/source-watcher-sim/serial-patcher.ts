// The fluxcd/pkg patch helper as source-watcher uses it (a SerialPatcher): one patch is up to
// THREE separate requests, all attempted, errors collected (test/README.md, "The source-watcher simulator"), in this order:
//   (a) conditions only, if they changed: re-read the object, apply our condition changes onto
//       the fresh list, merge patch with a resourceVersion precondition via the status
//       subresource; up to 5 tries, retrying on Conflict only;
//   (b) metadata (finalizers) merge patch of the main resource, if they changed;
//   (c) a status-subresource merge patch whenever anything in .status changed, conditions
//       included, with no precondition. Its body holds the changed keys of the rest of .status
//       (conditions stripped) and, when the finalizers changed, the same metadata.finalizers as
//       (b). So a patch that changed only conditions still sends (c) with the body `{}`, and the
//       finalizer patch of a new AG sends (c) with only metadata.finalizers: both are no-ops on
//       the server (the status subresource ignores metadata), exactly as recorded from the real
//       source-watcher v2.1.0 (test/recorded/source-watcher-v2.1.0, docs/adr/0013-simulator-fidelity.md).
// Between patches it remembers what it last wrote successfully, so each patch sends only what
// changed since (like the SerialPatcher's "before" object).

import type { AgApi } from './ag-api.js';
import { httpStatusOf } from './ag-api.js';
import { applyConditions, diffConditions, type ConditionChange } from './conditions.js';
import {
  CONDITIONS_PATCH_BACKOFF_FACTOR,
  CONDITIONS_PATCH_BACKOFF_MS,
  CONDITIONS_PATCH_STEPS,
  READY,
} from './constants.js';
import { clone, jsonEqual } from './json.js';
import type { AgKey, SimAg } from './types.js';

export interface PatcherDeps {
  api: AgApi;
  key: AgKey;
  /** Decide whether this conditions request is lost (fault injection). */
  loseConditions(setsVerdict: boolean): boolean;
  /**
   * A conditions request that carried the verdict failed at the API server (its re-read or the
   * patch: a degraded API server, the storm). The rest of status is still sent: fluxcd/pkg#934
   * itself, not injected.
   */
  verdictFailed?(): void;
  /** Virtual-time sleep; rejects when the simulator stops. */
  sleep(ms: number): Promise<void>;
  /** Throws when the simulator has stopped. */
  guard(): void;
}

/** Thrown for a conditions request the fault injection dropped. */
export class LostWriteError extends Error {
  constructor(key: AgKey) {
    super(
      `conditions patch of ${key} lost: etcdserver: request timed out (simulated fluxcd/pkg#934)`,
    );
    this.name = 'LostWriteError';
  }
}

function setsVerdict(changes: readonly ConditionChange[]): boolean {
  return changes.some(
    (c) =>
      c.type === READY &&
      c.op === 'set' &&
      (c.condition.status === 'True' || c.condition.status === 'False'),
  );
}

function statusRest(ag: SimAg): Record<string, unknown> {
  const rest: Record<string, unknown> = { ...(ag.status ?? {}) };
  delete rest.conditions;
  return rest;
}

export interface PatchOutcome {
  errors: Error[];
  /** The conditions request was dropped by fault injection. */
  lostConditions: boolean;
}

export class SerialPatcher {
  #before: SimAg;

  constructor(
    private readonly deps: PatcherDeps,
    original: SimAg,
  ) {
    this.#before = clone(original);
  }

  async patch(obj: SimAg): Promise<PatchOutcome> {
    const errors: Error[] = [];
    let lostConditions = false;
    const before = this.#before;
    const { namespace, name } = obj.metadata;

    const collect = (e: unknown): void => {
      this.deps.guard();
      errors.push(e instanceof Error ? e : new Error(String(e)));
    };

    // (a) conditions.
    const changes = diffConditions(before.status?.conditions ?? [], obj.status?.conditions ?? []);
    if (changes.length > 0) {
      if (this.deps.loseConditions(setsVerdict(changes))) {
        lostConditions = true;
        // What would have been sent (from what this patcher last wrote; no re-read for a request
        // that never reaches the server).
        this.deps.api.reportLost(namespace, name, {
          metadata: { resourceVersion: before.metadata.resourceVersion },
          status: { conditions: applyConditions(before.status?.conditions ?? [], changes) },
        });
        errors.push(new LostWriteError(this.deps.key));
      } else {
        await this.#patchConditions(namespace, name, changes).catch((e: unknown) => {
          collect(e);
          if (setsVerdict(changes)) this.deps.verdictFailed?.();
        });
      }
    }

    // (b) metadata.
    const finalizersChanged = !jsonEqual(
      before.metadata.finalizers ?? [],
      obj.metadata.finalizers ?? [],
    );
    const finalizers = obj.metadata.finalizers?.length ? obj.metadata.finalizers : null;
    if (finalizersChanged) {
      this.deps.guard();
      await this.deps.api.patch(namespace, name, { metadata: { finalizers } }).catch(collect);
    }

    // (c) the rest of .status, sent whenever .status changed (conditions included).
    const oldRest = statusRest(before);
    const newRest = statusRest(obj);
    const statusPatch: Record<string, unknown> = {};
    for (const field of new Set([...Object.keys(oldRest), ...Object.keys(newRest)])) {
      if (!jsonEqual(oldRest[field], newRest[field])) statusPatch[field] = newRest[field] ?? null;
    }
    const restChanged = Object.keys(statusPatch).length > 0;
    if (restChanged || changes.length > 0) {
      this.deps.guard();
      const body = {
        ...(finalizersChanged ? { metadata: { finalizers } } : {}),
        ...(restChanged ? { status: statusPatch } : {}),
      };
      await this.deps.api.patchStatus(namespace, name, body).catch(collect);
    }

    if (errors.length === 0) this.#before = clone(obj);
    return { errors, lostConditions };
  }

  async #patchConditions(
    namespace: string,
    name: string,
    changes: readonly ConditionChange[],
  ): Promise<void> {
    let delay = CONDITIONS_PATCH_BACKOFF_MS;
    for (let attempt = 1; ; attempt++) {
      this.deps.guard();
      const latest = await this.deps.api.get(namespace, name);
      if (!latest) throw new Error(`conditions patch: ${namespace}/${name} not found`);
      const conditions = applyConditions(latest.status?.conditions ?? [], changes);
      try {
        this.deps.guard();
        await this.deps.api.patchStatus(namespace, name, {
          metadata: { resourceVersion: latest.metadata.resourceVersion },
          status: { conditions },
        });
        return;
      } catch (e) {
        if (httpStatusOf(e) !== 409) throw e;
        if (attempt >= CONDITIONS_PATCH_STEPS) {
          throw new Error(
            `conditions patch of ${namespace}/${name}: still conflicting after ${attempt} tries`,
            { cause: e },
          );
        }
      }
      await this.deps.sleep(delay);
      delay *= CONDITIONS_PATCH_BACKOFF_FACTOR;
    }
  }
}
