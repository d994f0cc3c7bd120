// What the function suites in this folder share: the start of a file (its time zero, the admin
// KubeConfig, its function suite, and detect's force and force-drift's answer to it on that time
// zero), the time rule's grace, the tracking annotations force-drift leaves on an AG, an owned
// pair (a PackageSource and the AG it controls) and one in attempt 2's wait window, the history
// read of one AG, a merge patch of an AG's metadata and a logger whose lines a test reads.

import type { KubeConfig } from '@kubernetes/client-node';
import { expect } from 'vitest';
import type { CloudEvent, CloudEventV1 } from 'cloudevents';
import {
  ACTION_FORCE,
  ANNOTATION_ATTEMPTS,
  ANNOTATION_LAST_RECOVERY_AT,
  ANNOTATION_REQUESTED_AT,
  SIGNAL_LOST_WRITE,
  formatTimeNano,
  type ActionData,
} from '../../../shared/core/index.js';
import type {
  AgRef,
  ArtifactGenerator,
  ArtifactGeneratorStatus,
  Condition,
  PackageSource,
} from '../../../shared/core/objects/types.js';
import {
  createPackageSource,
  customObjects,
  makePackageSource,
  MERGE_PATCH,
  testKubeConfig,
  uniqueName,
} from '../../support/apiserver.js';
import { AG_RESOURCE } from '../../harness/knative/index.js';
import {
  createAgWithStatus,
  deleteAllArtifactGenerators,
  stuckStatus,
} from '../../support/ag-states.js';
import { marker } from '../../support/conditions.js';
import { SettableClock } from '../../harness/functions.js';
import { actionEvent, cloudEvent, postEvent, type Started } from '../../support/http-events.js';
import { functionSuite, type FunctionSuite } from '../../support/function-suite.js';
import type { CallMatch } from '../../support/kube-proxy.js';
import { LogCapture } from '../../harness/system/log-capture.js';
import { createLogger, type Logger } from '../../../shared/runtime/logger.js';

export interface FunctionFile {
  /** The file's time zero: now, in whole seconds. */
  readonly T0: number;
  readonly kc: KubeConfig;
  readonly suite: FunctionSuite;
  /** detect's first force of `ag`, decided at `decidedAt` (T0), with or without the lost-write signal. */
  forceEvent(ag: ArtifactGenerator, signal: boolean, decidedAt?: number): CloudEvent<unknown>;
  /** The forces of `ag` the suite's sink received. */
  forcesFor(ag: ArtifactGenerator): CloudEventV1<unknown>[];
  /**
   * force-drift, its clock a second after T0, given forceEvent(ag, signal) (the proxy's record
   * cleared first): it answers 200 with `result`.
   */
  expectForceAnswer(ag: ArtifactGenerator, signal: boolean, result: string): Promise<void>;
  /** Empties the cluster of AGs (a sweep sees them all), then starts detect, its clock at `at`. */
  detectOnEmptyCluster(at: number): Promise<{ clock: SettableClock; d: Started }>;
}

/**
 * Registers the file's function suite (tagged `tag`) and returns its time zero and doors; a file
 * takes them as `const { T0, kc, suite, ...file } = functionFile(tag)`.
 */
export function functionFile(tag: string): FunctionFile {
  const T0 = Math.floor(Date.now() / 1000) * 1000;
  const kc = testKubeConfig();
  const suite = functionSuite(tag, kc);
  const forceEvent = (ag: ArtifactGenerator, signal: boolean, decidedAt = T0) => {
    const { data, source } = actionEvent(ACTION_FORCE, ag, 0, decidedAt);
    const signalled = { ...(data as ActionData), ...(signal && { signal: SIGNAL_LOST_WRITE }) };
    return cloudEvent({ type: ACTION_FORCE, source, data: signalled });
  };
  return {
    T0,
    kc,
    suite,
    forceEvent,
    forcesFor: (ag) =>
      suite.sink.events.filter(
        (e) => e.type === ACTION_FORCE && (e.data as ActionData).name === ag.metadata?.name,
      ),
    expectForceAnswer: async (ag, signal, result) => {
      const f = await suite.startForceDrift(new SettableClock(T0 + 1_000));
      suite.proxy.clearCalls();
      expect(await postEvent(f.url, forceEvent(ag, signal))).toMatchObject({
        status: 200,
        body: { result },
      });
    },
    detectOnEmptyCluster: async (at) => {
      await deleteAllArtifactGenerators(kc);
      const clock = new SettableClock(at);
      return { clock, d: await suite.startDetect(clock) };
    },
  };
}

/** testConfig's time rule: an AG whose Ready stays Unknown this long is stuck. */
export const GRACE_MS = 30_000;

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

/**
 * A PackageSource and the AG it controls (one name), the AG created with `status` and
 * `annotations`, the PackageSource with `finalizers` (a test that deletes it holds it so).
 */
export async function ownedPairWith(
  kc: KubeConfig,
  status: ArtifactGeneratorStatus,
  o: { annotations?: Record<string, string>; finalizers?: string[] } = {},
): Promise<{ name: string; packageSource: PackageSource; ag: ArtifactGenerator }> {
  const name = uniqueName('pair');
  const body = makePackageSource({ name });
  if (o.finalizers) body.metadata = { ...body.metadata, finalizers: o.finalizers };
  const packageSource = await createPackageSource(body, kc);
  const ag = await createAgWithStatus(kc, status, {
    name,
    owner: { name, uid: packageSource.metadata?.uid ?? '' },
    ...(o.annotations ? { annotations: o.annotations } : {}),
  });
  return { name, packageSource, ag };
}

/**
 * An owned AG stuck since `stuckSince` in attempt 2's wait window: claimed at `claim`, its Ready
 * `readyNow` (our marker unless given), its requestedAt `requestedAt` (a bump by someone else
 * when later than the claim).
 */
export const claimedInWaitWindow = (
  kc: KubeConfig,
  o: { stuckSince: number; claim: number; requestedAt: number; readyNow?: Condition | undefined },
) =>
  ownedPairWith(
    kc,
    { ...stuckStatus(o.stuckSince), conditions: [o.readyNow ?? marker(o.claim)] },
    {
      annotations: {
        ...trackingAnnotations(2, o.claim, false),
        [ANNOTATION_REQUESTED_AT]: new Date(o.requestedAt).toISOString(),
      },
    },
  );

/** detect's and force-drift's history reads: a LIST of one AG at an exact revision. */
export const historyRead = (clientTag: string): CallMatch => ({
  clientTag,
  verb: 'list',
  resource: 'artifactgenerators',
  where: (c) => c.namespace !== '',
});

/** Merge-patches the metadata of the AG `ref` (as someone other than the functions). */
export const patchAgMetadata = (kc: KubeConfig, ref: AgRef, metadata: object) =>
  customObjects(kc).patchNamespacedCustomObject(
    { ...AG_RESOURCE, ...ref, body: { metadata } },
    MERGE_PATCH,
  );

/** A logger at `level` whose lines are kept, parsed, in `logs.records`. */
export function capturingLogger(
  name: string,
  level = 'debug',
): { logger: Logger; logs: LogCapture } {
  const logs = new LogCapture();
  return { logger: createLogger({ name, level, destination: logs }), logs };
}
