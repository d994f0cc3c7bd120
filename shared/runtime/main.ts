// Start-up shared by every function's main.ts: validate config (fail fast), build the deps, listen,
// and drain on SIGTERM.

import type { Express } from 'express';
import type { KubeConfig } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { createKubeClient } from '../kube/client.js';
import { createExternalArtifactClient } from '../kube/external-artifact-client.js';
import type { ExternalArtifactPort } from '../kube/external-artifact-port.js';
import type { KubePort } from '../kube/port.js';
import { createTokenReviewer } from '../kube/token-review.js';
import { onceKubeConfig } from '../kube/transport.js';
import { systemClock, type Clock } from './clock.js';
import { loadConfig, type FunctionConfig } from './env.js';
import { createLogger, type Logger } from './logger.js';
import type { Metrics } from './metrics.js';
import {
  countingApiErrors,
  countingDeliveries,
  countingRefusals,
  startMetrics,
} from './metrics-start.js';
import { exitOnSignals, listen } from './serve.js';
import { createSenderAuth, type SenderAuth } from './sender-auth.js';
import { checkPrerequisites } from './prerequisites.js';

export interface MainContext {
  readonly config: FunctionConfig;
  readonly logger: Logger;
  readonly kube: KubePort;
  /** Flux ExternalArtifacts, on the same kubeconfig as kube (only functions that use it call it). */
  readonly externalArtifacts: ExternalArtifactPort;
  readonly clock: Clock;
  readonly isReady: () => boolean;
  /** RECOVERY_AUTH=oidc: the sender check createFunctionApp runs first (docs/adr/0056). */
  readonly senderAuth: SenderAuth | undefined;
  /** The metrics port: no-op unless an OTLP endpoint is configured (docs/adr/0059). */
  readonly metrics: Metrics;
}

export async function runMain(name: string, build: (ctx: MainContext) => Express): Promise<void> {
  let config: FunctionConfig;
  try {
    config = loadConfig();
  } catch (e) {
    process.stderr.write(`${name}: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  }
  const logger = createLogger({ name, level: config.logLevel });
  // An explicit kubeconfig that is not there fails now, not at the first event.
  if (config.kubeconfigPath !== undefined && !existsSync(config.kubeconfigPath)) {
    logger.fatal({ kubeconfig: config.kubeconfigPath }, 'no Kubernetes configuration');
    process.exit(1);
  }
  // One kubeconfig for every client of this function, read at its first API request
  // (shared/kube/transport.ts): detect's no-op path and the dead-letter function never make one,
  // so they never load @kubernetes/client-node and start fast and small. Without a configuration
  // nothing can work: exit, so the platform restarts us visibly and the Broker redelivers.
  const kubeConfig = onceKubeConfig(async () => {
    let loaded: KubeConfig;
    try {
      const { loadKubeConfig } = await import('../kube/config.js');
      loaded = loadKubeConfig(
        config.kubeconfigPath !== undefined ? { kubeconfigPath: config.kubeconfigPath } : {},
      );
    } catch (e) {
      logger.fatal(
        { err: { message: e instanceof Error ? e.message : String(e) } },
        'no Kubernetes configuration',
      );
      logger.flush?.();
      process.exit(1);
    }
    // Which CRDs and APIs it needs and does not find, said once (shared/runtime/prerequisites.ts),
    // at the first API call, soon after start-up. Not at listen, so that the no-op path still
    // never loads client-node (bench P7). Never awaited; never throws.
    setImmediate(() => {
      void checkPrerequisites({ fn: name, kube, clock: systemClock, logger, config });
    });
    return loaded;
  });
  const requestTimeoutMs = config.kubeRequestTimeoutMs;
  const kube: KubePort = createKubeClient({
    kubeConfig,
    fieldManager: `source-watcher-recovery-${name}`,
    requestTimeoutMs,
    clock: systemClock,
  });
  const externalArtifacts = createExternalArtifactClient({
    kubeConfig,
    requestTimeoutMs,
    clock: systemClock,
  });
  const senderAuth =
    config.auth.mode === 'oidc'
      ? createSenderAuth({
          config: config.auth,
          reviewer: createTokenReviewer({ kubeConfig, requestTimeoutMs }),
        })
      : undefined;
  const metrics = await startMetrics(name, config, logger);
  let draining = false;
  let app: Express;
  try {
    app = build({
      config,
      logger,
      kube: countingApiErrors(kube, metrics),
      externalArtifacts: countingApiErrors(externalArtifacts, metrics),
      clock: systemClock,
      isReady: () => !draining,
      senderAuth: senderAuth && countingRefusals(senderAuth, metrics),
      metrics,
    });
  } catch (e) {
    logger.fatal(
      { err: { message: e instanceof Error ? e.message : String(e) } },
      'start-up failed',
    );
    process.exit(1);
  }
  const running = await listen(countingDeliveries(name, app, metrics), {
    port: config.port,
    logger,
  });
  exitOnSignals(
    running,
    logger,
    () => {
      draining = true;
    },
    () => metrics.shutdown(),
  );
  logger.info(
    { port: running.port, mode: config.recovery.mode, auth: config.auth.mode },
    'listening',
  );
}
