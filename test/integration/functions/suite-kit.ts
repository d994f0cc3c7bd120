// What the function suites in this folder share: the start of a file (its time zero, the admin
// KubeConfig and its function suite), the tracking annotations force-drift leaves on an AG, and
// detect's force with and without the lost-write signal, the forces it emitted, and the resync ping.

import type { KubeConfig } from '@kubernetes/client-node';
import {
  ACTION_FORCE,
  ANNOTATION_ATTEMPTS,
  ANNOTATION_LAST_RECOVERY_AT,
  ANNOTATION_REQUESTED_AT,
  PING,
  SIGNAL_LOST_WRITE,
  formatTimeNano,
  type ActionData,
} from '../../../shared/core/index.js';
import type { ArtifactGenerator } from '../../../shared/core/types.js';
import { testKubeConfig } from '../../support/apiserver.js';
import { ALARM_NAMESPACE } from '../../support/recovery-alarm.js';
import { actionEvent, cloudEvent } from '../../support/http-events.js';
import { functionSuite, type FunctionSuite } from '../../support/function-suite.js';

export interface FunctionFile {
  /** The file's time zero: now, in whole seconds. */
  readonly T0: number;
  readonly kc: KubeConfig;
  readonly suite: FunctionSuite;
}

/** Registers the file's function suite (tagged `tag`) and returns its time zero and doors. */
export function functionFile(tag: string): FunctionFile {
  const kc = testKubeConfig();
  return { T0: Math.floor(Date.now() / 1000) * 1000, kc, suite: functionSuite(tag, kc) };
}

/** The tracking annotations after `attempts` forces, the last at `at` (bumped: requestedAt too). */
export const trackingAnnotations = (
  attempts: number,
  at: number,
  bumped = true,
): Record<string, string> => ({
  [ANNOTATION_ATTEMPTS]: String(attempts),
  [ANNOTATION_LAST_RECOVERY_AT]: formatTimeNano(at),
  ...(bumped ? { [ANNOTATION_REQUESTED_AT]: formatTimeNano(at) } : {}),
});

/** detect's first force of `ag`, decided at `decidedAtMs`, with or without the lost-write signal. */
export function forceEvent(ag: ArtifactGenerator, decidedAtMs: number, signal: boolean) {
  const { data, source } = actionEvent(ACTION_FORCE, ag, 0, decidedAtMs);
  const signalled = { ...(data as ActionData), ...(signal ? { signal: SIGNAL_LOST_WRITE } : {}) };
  return cloudEvent({ type: ACTION_FORCE, source, data: signalled });
}

/** The forces of `ag` the suite's sink received. */
export const forcesFor = (suite: FunctionSuite, ag: ArtifactGenerator) =>
  suite.sink.events.filter(
    (e) => e.type === ACTION_FORCE && (e.data as ActionData).name === ag.metadata?.name,
  );

/** The resync PingSource's ping (its data the resync's purpose unless given). */
export const resyncPing = (data: object = { purpose: 'resync' }) =>
  cloudEvent({
    type: PING,
    source: `/apis/v1/namespaces/${ALARM_NAMESPACE}/pingsources/resync`,
    data,
  });
