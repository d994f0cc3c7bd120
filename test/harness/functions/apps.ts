// The five functions' apps, each its own createApp(deps) with the product's Kubernetes adapter:
// the one place the test world builds a function.

import type { KubeConfig } from '@kubernetes/client-node';
import type { Express } from 'express';
import { createApp as createDeadLetterApp } from '../../../functions/dead-letter/app.js';
import { createAlarmFollowUps } from '../../../functions/detect/alarm.js';
import { createApp as createDetectApp } from '../../../functions/detect/app.js';
import { createApp as createForceDriftApp } from '../../../functions/force-drift/app.js';
import { createApp as createHealApp } from '../../../functions/heal-external-artifacts/app.js';
import { createApp as createSurfaceStalledApp } from '../../../functions/surface-stalled/app.js';
import { createSyncTurns } from '../../../functions/surface-stalled/sync-turns.js';
import { createKubeClient } from '../../../shared/kube/client.js';
import { createExternalArtifactClient } from '../../../shared/kube/external-artifact-client.js';
import type { KubePort } from '../../../shared/kube/port.js';
import type { WaitClock } from '../../../shared/kube/in-place-retry.js';
import { createBrokerEmitter } from '../../../shared/runtime/broker-emitter.js';
import type { Clock } from '../../../shared/runtime/clock.js';
import type { FunctionConfig } from '../../../shared/runtime/env.js';
import type { Logger } from '../../../shared/runtime/logger.js';
import { createTokenReviewer } from '../../../shared/kube/token-review.js';
import { createSenderAuth, type SenderAuth } from '../../../shared/runtime/sender-auth.js';
import type { Metrics } from '../../../shared/runtime/metrics.js';

export const FUNCTION_NAMES = [
  'detect',
  'force-drift',
  'surface-stalled',
  'dead-letter',
  'heal-external-artifacts',
] as const;
export type FunctionName = (typeof FUNCTION_NAMES)[number];

/** The functions that call the API server (dead-letter holds no token). */
export const API_FUNCTION_NAMES = [
  'detect',
  'force-drift',
  'surface-stalled',
  'heal-external-artifacts',
] as const satisfies readonly FunctionName[];
export type ApiFunctionName = (typeof API_FUNCTION_NAMES)[number];

/**
 * The function's Kubernetes client as its main.ts builds it, on `kubeConfig`, sitting out a
 * refusal's Retry-After on `clock` (the function's).
 */
export function functionKubeClient(
  fn: FunctionName,
  kubeConfig: KubeConfig,
  clock: WaitClock,
  requestTimeoutMs = 30_000,
): KubePort {
  return createKubeClient({
    kubeConfig,
    fieldManager: `source-watcher-recovery-${fn}`,
    requestTimeoutMs,
    clock,
  });
}

export interface AppDeps {
  /** The cluster as the function sees it (its ExternalArtifact client is built on it). */
  readonly kubeConfig: KubeConfig;
  readonly kube: KubePort;
  readonly requestTimeoutMs: number;
  readonly clock: Clock;
  /** The clock its ExternalArtifact client sits out a Retry-After on; default `clock`. */
  readonly apiClock?: WaitClock;
  readonly logger: Logger;
  readonly config: FunctionConfig;
  /** Where detect posts its action events (the Broker's ingress). Required for detect. */
  readonly sinkUrl?: string;
  /** The function's metrics port (default: none recorded). */
  readonly metrics?: Metrics;
  /**
   * The sender check (RECOVERY_AUTH=oidc); default: senderAuthFor(config, kubeConfig), as main.ts
   * builds it (TokenReview as the function's own identity).
   */
  readonly senderAuth?: SenderAuth;
}

/** The sender check main.ts builds for `config` (none when RECOVERY_AUTH is off). */
export function senderAuthFor(
  config: FunctionConfig,
  kubeConfig: KubeConfig,
  requestTimeoutMs: number,
): SenderAuth | undefined {
  if (config.auth.mode !== 'oidc') return undefined;
  return createSenderAuth({
    config: config.auth,
    reviewer: createTokenReviewer({ kubeConfig, requestTimeoutMs }),
  });
}

export function buildFunctionApp(fn: FunctionName, deps: AppDeps): Express {
  const { kube, clock, logger, config } = deps;
  // dead-letter holds no token, so it cannot ask the API server (docs/adr/0056).
  const senderAuth =
    fn === 'dead-letter'
      ? undefined
      : (deps.senderAuth ?? senderAuthFor(config, deps.kubeConfig, deps.requestTimeoutMs));
  const opts = senderAuth !== undefined ? { senderAuth } : {};
  const metrics = deps.metrics !== undefined ? { metrics: deps.metrics } : {};
  switch (fn) {
    case 'detect':
      if (deps.sinkUrl === undefined) throw new Error('detect needs a sinkUrl');
      return createDetectApp(
        {
          kube,
          clock,
          logger,
          config,
          emitter: createBrokerEmitter({ url: deps.sinkUrl }),
          followUps: createAlarmFollowUps({ kube, clock, config }),
          ...metrics,
        },
        opts,
      );
    case 'force-drift':
      return createForceDriftApp({ kube, clock, logger, config, ...metrics }, opts);
    case 'surface-stalled':
      return createSurfaceStalledApp(
        { kube, clock, logger, config, turns: createSyncTurns(), ...metrics },
        opts,
      );
    case 'dead-letter':
      return createDeadLetterApp({ logger });
    case 'heal-external-artifacts':
      return createHealApp(
        {
          kube,
          externalArtifacts: createExternalArtifactClient({
            kubeConfig: deps.kubeConfig,
            requestTimeoutMs: deps.requestTimeoutMs,
            clock: deps.apiClock ?? clock,
          }),
          clock,
          logger,
          config,
          ...metrics,
        },
        opts,
      );
  }
}
