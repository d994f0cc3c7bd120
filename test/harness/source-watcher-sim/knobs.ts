// Fault and behaviour knobs, settable at runtime. Every setter validates its input and changes
// nothing when it throws.

import { DEFAULT_BUILD_TIME_MS } from './constants.js';
import { seededRng } from '../rng.js';
import type { AgKey } from './types.js';

/**
 * Which conditions requests a loss applies to:
 * - 'verdict': only a conditions request that sets Ready to True or False (the write that records
 *   a build's outcome). Losing it while the rest of .status lands is the fluxcd/pkg#934 stuck
 *   state: inventory + digest saved, Ready left Unknown/Progressing.
 * - 'every': every conditions request (finalizer, in-progress and outcome writes).
 */
export type LossScope = 'verdict' | 'every';

export interface LossRule {
  /** How many in-scope conditions requests to lose; default: all of them until cleared. */
  times?: number;
  /** Default 'verdict'. */
  scope?: LossScope;
}

interface ActiveLoss {
  remaining: number;
  scope: LossScope;
}

function assertScope(scope: unknown): asserts scope is LossScope {
  if (scope !== 'verdict' && scope !== 'every') {
    throw new TypeError(
      `source-watcher-sim: loss scope must be 'verdict' or 'every', got ${String(scope)}`,
    );
  }
}

function assertDuration(name: string, ms: unknown): asserts ms is number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw new RangeError(
      `source-watcher-sim: ${name} must be a finite number >= 0, got ${String(ms)}`,
    );
  }
}

export class Knobs {
  readonly #loss = new Map<AgKey, ActiveLoss>();
  #lossProbability = 0;
  #lossProbabilityScope: LossScope = 'verdict';
  readonly #random: () => number;

  dead = false;
  #buildTimeMs: number;
  /** Per-AG build time (virtual ms), overriding buildTimeMs for that AG. */
  readonly #buildTimeOf = new Map<AgKey, number>();
  readonly buildFailure = new Set<AgKey>();
  readonly sourceMissing = new Set<AgKey>();
  readonly sourceRevision = new Map<AgKey, string>();
  /** Cleared for a key by its next successful build (storage restored). */
  readonly artifactMissing = new Set<AgKey>();
  /**
   * The build for the n-th distinct `requestedAt` value (the rebuild after the n-th force) that
   * fails honestly with Ready=False/ReconciliationFailed, as the storm's errors made the real
   * source-watcher's rebuild fail (issue 19, defect 4). That Ready write is never lost, whatever
   * the loss rule.
   */
  readonly #honestFailureAt = new Map<AgKey, number>();
  readonly #requestsBuilt = new Map<AgKey, Set<string>>();

  constructor(seed: number, buildTimeMs = DEFAULT_BUILD_TIME_MS) {
    if (!Number.isInteger(seed))
      throw new TypeError(`source-watcher-sim: seed must be an integer, got ${seed}`);
    assertDuration('buildTimeMs', buildTimeMs);
    this.#random = seededRng(seed);
    this.#buildTimeMs = buildTimeMs;
  }

  get buildTimeMs(): number {
    return this.#buildTimeMs;
  }
  set buildTimeMs(ms: number) {
    assertDuration('buildTimeMs', ms);
    this.#buildTimeMs = ms;
  }

  /** Set this AG's own build time; undefined goes back to the global buildTimeMs. */
  setBuildTimeOf(key: AgKey, ms: number | undefined): void {
    if (ms === undefined) {
      this.#buildTimeOf.delete(key);
      return;
    }
    assertDuration('build time', ms);
    this.#buildTimeOf.set(key, ms);
  }

  /** The build time that applies to this AG now. */
  buildTimeOf(key: AgKey): number {
    return this.#buildTimeOf.get(key) ?? this.#buildTimeMs;
  }

  setLoss(key: AgKey, rule: LossRule): void {
    const times = rule.times ?? Number.POSITIVE_INFINITY;
    const scope = rule.scope ?? 'verdict';
    if (!(times === Number.POSITIVE_INFINITY || (Number.isInteger(times) && times > 0))) {
      throw new RangeError(`source-watcher-sim: times must be a positive integer, got ${times}`);
    }
    assertScope(scope);
    this.#loss.set(key, { remaining: times, scope });
  }

  clearLoss(key: AgKey): void {
    this.#loss.delete(key);
  }

  setLossProbability(p: number, scope: LossScope = 'verdict'): void {
    if (typeof p !== 'number' || !(p >= 0 && p <= 1)) {
      throw new RangeError(`source-watcher-sim: probability must be within [0, 1], got ${p}`);
    }
    assertScope(scope);
    this.#lossProbability = p;
    this.#lossProbabilityScope = scope;
  }

  /** Decide whether this conditions request is lost; consumes a per-key loss when it applies. */
  takeConditionsLoss(key: AgKey, setsVerdict: boolean): boolean {
    const rule = this.#loss.get(key);
    if (rule && (rule.scope === 'every' || setsVerdict)) {
      rule.remaining -= 1;
      if (rule.remaining <= 0) this.#loss.delete(key);
      return true;
    }
    if (this.#lossProbability > 0 && (this.#lossProbabilityScope === 'every' || setsVerdict)) {
      return this.#random() < this.#lossProbability;
    }
    return false;
  }

  /** The first build for this AG's n-th distinct requestedAt fails honestly; once. */
  failBuildHonestly(key: AgKey, request: number): void {
    if (!Number.isInteger(request) || request < 1) {
      throw new RangeError(
        `source-watcher-sim: request must be a positive integer, got ${request}`,
      );
    }
    this.#honestFailureAt.set(key, request);
  }

  /**
   * Records a build reaching its outcome with this requestedAt (undefined: none); true when it is
   * the one to fail honestly.
   */
  takeBuild(key: AgKey, requestedAt: string | undefined): boolean {
    if (requestedAt === undefined) return false;
    const seen = this.#requestsBuilt.get(key) ?? new Set<string>();
    this.#requestsBuilt.set(key, seen);
    if (seen.has(requestedAt)) return false;
    seen.add(requestedAt);
    if (this.#honestFailureAt.get(key) !== seen.size) return false;
    this.#honestFailureAt.delete(key);
    return true;
  }

  revisionOf(key: AgKey): string {
    return this.sourceRevision.get(key) ?? '';
  }
}
