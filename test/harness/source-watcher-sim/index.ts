// A faithful simulator of Flux source-watcher v2.1.0's ArtifactGenerator reconciler, run against
// a real API server on a VirtualClock. See docs/adr/0007-source-watcher-simulator.md.

export {
  createSourceWatcherSim,
  type ReconcileRecord,
  type SimLog,
  type SimRequest,
  type SimStats,
  type SourceWatcherSim,
  type SourceWatcherSimOptions,
} from './sim.js';
export type { LossRule, LossScope } from './knobs.js';
export type { DriftReason } from './drift.js';
export { DRIFT_REASONS } from './drift.js';
export type { ReconcileOutcome } from './reconciler.js';
export type { AgKey, AgName, SimAg, SimCondition } from './types.js';
