// The decisions `decide` returns, as short builders for the core unit tables.

import type { Decision, GateReason } from '../../../shared/core/index.js';

export const healthy: Decision = { kind: 'healthy', clearTracking: false, needsHistory: false };
/** Healthy by the time rule, with the stall's shape: the AG's history may show a lost write. */
export const healthyAskingHistory: Decision = {
  kind: 'healthy',
  clearTracking: false,
  needsHistory: true,
};
/** Healthy, and the recovery's tracking annotations are to be cleared. */
export const healthyClear: Decision = { kind: 'healthy', clearTracking: true, needsHistory: false };
export const ignore = (why: 'deleting' | 'invalid'): Decision => ({ kind: 'ignore', why });
export const force = (attempt: number, gate: GateReason): Decision => ({
  kind: 'force',
  attempt,
  gate,
});
export const resume = (attempt: number, gate: GateReason): Decision => ({
  kind: 'resume',
  attempt,
  gate,
});
export const wait = (attempts: number, until: number, gate: GateReason): Decision => ({
  kind: 'wait',
  attempts,
  until,
  gate,
});
export const giveUp = (attempts: number, gate: GateReason): Decision => ({
  kind: 'give-up',
  attempts,
  gate,
});
