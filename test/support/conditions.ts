// The one condition vocabulary of every suite (unit, integration, reliability, bench): the Ready
// conditions source-watcher v2.1.0 writes on an AG, worded as it words them (test/recorded/source-watcher-v2.1.0), the
// recovery's own marker, source-watcher's Reconciling, and `readyWith` for any other reason.
// Every builder takes `(at, generation = 1)`. Pure: no vitest, no client-node, no node:* imports,
// so the unit tests use it too.

import { REASON_FORCED } from '../../shared/core/objects/conditions.js';
import { markerCondition } from '../../shared/core/decision/force-plan.js';
import { formatTimeSeconds } from '../../shared/core/codecs/time.js';
import type { Condition } from '../../shared/core/objects/types.js';
import {
  MSG_IN_PROGRESS,
  REASON_BUILD_FAILED,
  REASON_PROGRESSING,
  REASON_RECONCILIATION_FAILED,
  REASON_SUCCEEDED,
} from '../harness/source-watcher-sim/constants.js';
import type { ConditionStatus } from '../harness/source-watcher-sim/types.js';

/** Every builder's condition carries every field (so the simulator's stricter type takes it too). */
export type FullCondition = Required<Condition>;

/**
 * A Ready condition with any status and reason; `message` defaults to "<reason> message". (Not
 * `readyCondition`: that is test/harness/system/world.ts's reader of an object's Ready.)
 */
export function readyWith(
  status: ConditionStatus,
  reason: string,
  at: number,
  generation = 1,
  message = `${reason} message`,
): FullCondition {
  return {
    type: 'Ready',
    status,
    reason,
    message,
    lastTransitionTime: formatTimeSeconds(at),
    observedGeneration: generation,
  };
}

/** A build in progress: Ready Unknown/Progressing (also the fluxcd/pkg#934 stall's Ready). */
export const progressing = (at: number, generation = 1): FullCondition =>
  readyWith('Unknown', REASON_PROGRESSING, at, generation, MSG_IN_PROGRESS);

/** A build that succeeded with `artifacts` artifacts (the tests' AGs have one). */
export const succeeded = (at: number, generation = 1, artifacts = 1): FullCondition =>
  readyWith(
    'True',
    REASON_SUCCEEDED,
    at,
    generation,
    `reconciliation succeeded, generated ${artifacts} artifact(s)`,
  );

/** An honest build failure. */
export const buildFailed = (at: number, generation = 1): FullCondition =>
  readyWith('False', REASON_BUILD_FAILED, at, generation, 'build failed: copy: no such file');

/** The honest failure source-watcher writes when its own API requests fail. */
export const reconciliationFailed = (at: number, generation = 1): FullCondition =>
  readyWith('False', REASON_RECONCILIATION_FAILED, at, generation, 'etcdserver: request timed out');

/**
 * The recovery's marker: Ready=False/SourceWatcherRecoveryForced on `generation`, worded as
 * force-drift words it (its message is shared/core's `markerCondition`'s, so the two cannot part).
 */
export const marker = (at: number, generation = 1): FullCondition =>
  readyWith(
    'False',
    REASON_FORCED,
    at,
    generation,
    markerCondition({ metadata: { generation } }, at).message ?? '',
  );

/** source-watcher's Reconciling condition: another condition every write of ours must keep. */
export const reconciling = (at: number, generation = 1): FullCondition => ({
  type: 'Reconciling',
  status: 'True',
  reason: REASON_PROGRESSING,
  message: MSG_IN_PROGRESS,
  lastTransitionTime: formatTimeSeconds(at),
  observedGeneration: generation,
});
