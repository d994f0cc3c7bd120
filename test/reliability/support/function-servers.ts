// Starts the real function apps (createApp) on 127.0.0.1 with the product's Kubernetes adapter
// pointed at the recording proxy under a client tag of our choice, as the function's own
// ServiceAccount (RBAC enforced: test/support/identities.ts), a settable clock, a request
// timeout of our choice and an optional log destination.

import type { Express } from 'express';
import { createApp as createDetectApp } from '../../../functions/detect/app.js';
import { createAlarmFollowUps } from '../../../functions/detect/alarm.js';
import { createApp as createForceDriftApp } from '../../../functions/force-drift/app.js';
import { createApp as createSurfaceStalledApp } from '../../../functions/surface-stalled/app.js';
import { createApp as createHealApp } from '../../../functions/heal-external-artifacts/app.js';
import { createExternalArtifactClient } from '../../../shared/kube/external-artifact-client.js';
import { createKubeClient } from '../../../shared/kube/client.js';
import type { KubePort } from '../../../shared/kube/port.js';
import { createBrokerEmitter } from '../../../shared/runtime/broker-emitter.js';
import type { FunctionConfig } from '../../../shared/runtime/env.js';
import { createLogger, type Logger } from '../../../shared/runtime/logger.js';
import type { KubeConfig } from '@kubernetes/client-node';
import type { SettableClock } from '../../support/function-under-test.js';
import { testConfig } from '../../support/function-under-test.js';
import { startHttp, type Started } from '../../support/http-events.js';
import { functionKubeConfigFor, hasOwnCredentials } from '../../support/identities.js';

export type FunctionName = 'detect' | 'force-drift' | 'surface-stalled' | 'heal-external-artifacts';
export const FUNCTION_NAMES: readonly FunctionName[] = [
  'detect',
  'force-drift',
  'surface-stalled',
  'heal-external-artifacts',
];

export interface FunctionServerOptions {
  readonly fn: FunctionName;
  /**
   * The cluster (the proxy). buildApp uses it as is; startFunction as the function's
   * ServiceAccount unless it carries credentials of its own.
   */
  readonly kubeConfig: KubeConfig;
  readonly clock: SettableClock;
  /** Per-request timeout of the adapter. */
  readonly requestTimeoutMs?: number;
  readonly env?: Record<string, string>;
  readonly logger?: Logger;
  /** Where detect posts action events. Required for detect. */
  readonly sinkUrl?: string;
}

export interface FunctionServer extends Started {
  readonly kube: KubePort;
  readonly config: FunctionConfig;
}

export function buildApp(opts: FunctionServerOptions): {
  app: Express;
  kube: KubePort;
  config: FunctionConfig;
} {
  const config = testConfig(opts.env);
  const kube = createKubeClient({
    kubeConfig: opts.kubeConfig,
    fieldManager: `reliability-${opts.fn}`,
    requestTimeoutMs: opts.requestTimeoutMs ?? 5000,
  });
  const logger = opts.logger ?? createLogger({ name: opts.fn, level: 'silent' });
  const clock = opts.clock;
  switch (opts.fn) {
    case 'detect': {
      if (opts.sinkUrl === undefined) throw new Error('detect needs a sinkUrl');
      const app = createDetectApp({
        kube,
        clock,
        logger,
        config,
        emitter: createBrokerEmitter({ url: opts.sinkUrl }),
        followUps: createAlarmFollowUps({ kube, clock, config }),
      });
      return { app, kube, config };
    }
    case 'force-drift':
      return { app: createForceDriftApp({ kube, clock, logger, config }), kube, config };
    case 'surface-stalled':
      return { app: createSurfaceStalledApp({ kube, clock, logger, config }), kube, config };
    case 'heal-external-artifacts': {
      const externalArtifacts = createExternalArtifactClient({
        kubeConfig: opts.kubeConfig,
        requestTimeoutMs: opts.requestTimeoutMs ?? 5000,
      });
      const app = createHealApp({ kube, externalArtifacts, clock, logger, config });
      return { app, kube, config };
    }
  }
}

export async function startFunction(opts: FunctionServerOptions): Promise<FunctionServer> {
  // A kubeconfig with credentials of its own (the log-hygiene suite's marker credentials) is
  // used as given; any other (the proxy's) runs as the function's ServiceAccount.
  const kubeConfig = hasOwnCredentials(opts.kubeConfig)
    ? opts.kubeConfig
    : await functionKubeConfigFor(opts.kubeConfig, opts.fn, opts.env);
  const { app, kube, config } = buildApp({ ...opts, kubeConfig });
  const started = await startHttp(app);
  return { ...started, kube, config };
}
