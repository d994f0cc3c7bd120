// Counts work in flight and lets callers wait until none is left.

export class PendingWork {
  #count = 0;
  #waiters: (() => void)[] = [];

  get count(): number {
    return this.#count;
  }

  /** Track a promise: counted from now until it settles. Returns the same promise. */
  track<T>(work: Promise<T>): Promise<T> {
    this.#count += 1;
    return work.finally(() => {
      this.#count -= 1;
      if (this.#count === 0) this.#release();
    });
  }

  /** Resolves when nothing is in flight (immediately when nothing is). */
  idle(): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  #release(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}

/** A real-time sleep that ends early when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
