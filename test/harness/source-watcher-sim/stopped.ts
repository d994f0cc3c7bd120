// Raised inside a reconcile when the simulator stops (or dies) under it; never reported.

export class StoppedError extends Error {
  constructor() {
    super('source-watcher-sim stopped');
    this.name = 'StoppedError';
  }
}
