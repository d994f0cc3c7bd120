// A client-go style work queue: deduplicated (a key waiting to be processed is queued once), and a
// key being processed is never handed out again until done() — a key is never reconciled
// concurrently with itself; if it was added meanwhile, done() queues it again.

import { RETRY_MAX_MS, RETRY_MIN_MS } from './constants.js';
import type { AgKey } from './types.js';

export class WorkQueue {
  readonly #queue: AgKey[] = [];
  readonly #dirty = new Set<AgKey>();
  readonly #processing = new Set<AgKey>();

  add(key: AgKey): void {
    if (this.#dirty.has(key)) return;
    this.#dirty.add(key);
    if (!this.#processing.has(key)) this.#queue.push(key);
  }

  /** The next key ready to process, or undefined. */
  get(): AgKey | undefined {
    const key = this.#queue.shift();
    if (key === undefined) return undefined;
    this.#dirty.delete(key);
    this.#processing.add(key);
    return key;
  }

  done(key: AgKey): void {
    this.#processing.delete(key);
    if (this.#dirty.has(key)) this.#queue.push(key);
  }

  /** Drop every waiting key (keys being processed stay until done()). */
  clear(): void {
    this.#queue.length = 0;
    this.#dirty.clear();
  }

  /** Keys ready to be handed out. */
  get length(): number {
    return this.#queue.length;
  }
}

/** Per-key exponential backoff, like controller-runtime's item failure rate limiter. */
export class RateLimiter {
  readonly #failures = new Map<AgKey, number>();

  constructor(
    private readonly minMs = RETRY_MIN_MS,
    private readonly maxMs = RETRY_MAX_MS,
  ) {}

  /** The delay for the next retry of key; counts one more failure. */
  when(key: AgKey): number {
    const n = this.#failures.get(key) ?? 0;
    this.#failures.set(key, n + 1);
    return Math.min(this.minMs * 2 ** n, this.maxMs);
  }

  forget(key: AgKey): void {
    this.#failures.delete(key);
  }

  reset(): void {
    this.#failures.clear();
  }
}
