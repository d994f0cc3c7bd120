// The four functions as users run them: each replica is the function's own createApp(deps) with
// the product's Kubernetes adapter, config from loadConfig, a pino logger, served by the product's
// listen() on 127.0.0.1. Only the clock is shared and virtual.

import type { KubeConfig } from '@kubernetes/client-node';
import type { Express } from 'express';
import { createApp as createDeadLetterApp } from '../../../functions/dead-letter/app.js';
import { createAlarmFollowUps } from '../../../functions/detect/alarm.js';
import { createApp as createDetectApp } from '../../../functions/detect/app.js';
import { createApp as createForceDriftApp } from '../../../functions/force-drift/app.js';
import { createApp as createHealApp } from '../../../functions/heal-external-artifacts/app.js';
import { createApp as createSurfaceStalledApp } from '../../../functions/surface-stalled/app.js';
import { createKubeClient } from '../../../shared/kube/client.js';
import { createExternalArtifactClient } from '../../../shared/kube/external-artifact-client.js';
import { createBrokerEmitter } from '../../../shared/runtime/broker-emitter.js';
import type { Clock } from '../../../shared/runtime/clock.js';
import { loadConfig, type FunctionConfig } from '../../../shared/runtime/env.js';
import { createLogger, type Logger } from '../../../shared/runtime/logger.js';
import { listen, type RunningServer } from '../../../shared/runtime/serve.js';
import type { pino } from 'pino';

export const FUNCTION_NAMES = [
  'detect',
  'force-drift',
  'surface-stalled',
  'dead-letter',
  'heal-external-artifacts',
] as const;
export type FunctionName = (typeof FUNCTION_NAMES)[number];

export interface FunctionReplica {
  readonly name: FunctionName;
  readonly index: number;
  /** http://127.0.0.1:PORT/ */
  readonly url: string;
  readonly config: FunctionConfig;
  close(): Promise<void>;
}

export interface StartFunctionsOptions {
  replicas: number;
  clock: Clock;
  /** The KubeConfig a function's ServiceAccount would have (tagged per function by the proxy). */
  kubeConfigFor: (name: FunctionName) => KubeConfig;
  brokerUrl: string;
  /** Extra environment (RECOVERY_MODE, RECOVERY_GRACE_PERIOD, KUBE_REQUEST_TIMEOUT_MS, ...). */
  env: Readonly<Record<string, string>>;
  logLevel: string;
  logDestination: pino.DestinationStream | undefined;
}

/** Starts every replica of every function; on failure, closes what was started and rethrows. */
export async function startFunctions(opts: StartFunctionsOptions): Promise<FunctionReplica[]> {
  const replicas: FunctionReplica[] = [];
  try {
    for (const name of FUNCTION_NAMES) {
      for (let index = 0; index < opts.replicas; index++) {
        replicas.push(await startReplica(name, index, opts));
      }
    }
  } catch (e) {
    await Promise.allSettled(replicas.map((r) => r.close()));
    throw e;
  }
  return replicas;
}

async function startReplica(
  name: FunctionName,
  index: number,
  opts: StartFunctionsOptions,
): Promise<FunctionReplica> {
  const config = loadConfig({
    KUBE_REQUEST_TIMEOUT_MS: '5000',
    // The pod name Knative's downward API would give (reportingInstance of our Events).
    POD_NAME: `${name}-${index}`,
    ...opts.env,
    LOG_LEVEL: opts.logLevel,
    BROKER_URL: opts.brokerUrl,
  });
  const logger: Logger = createLogger({
    name,
    level: config.logLevel,
    ...(opts.logDestination !== undefined ? { destination: opts.logDestination } : {}),
  }).child({ replica: index });
  const kube = createKubeClient({
    kubeConfig: opts.kubeConfigFor(name),
    fieldManager: `source-watcher-recovery-${name}`,
    requestTimeoutMs: config.kubeRequestTimeoutMs,
  });
  const clock = opts.clock;
  let app: Express;
  switch (name) {
    case 'detect':
      app = createDetectApp({
        kube,
        clock,
        logger,
        config,
        emitter: createBrokerEmitter({ url: opts.brokerUrl }),
        followUps: createAlarmFollowUps({ kube, clock, config }),
      });
      break;
    case 'force-drift':
      app = createForceDriftApp({ kube, clock, logger, config });
      break;
    case 'surface-stalled':
      app = createSurfaceStalledApp({ kube, clock, logger, config });
      break;
    case 'dead-letter':
      app = createDeadLetterApp({ logger });
      break;
    case 'heal-external-artifacts':
      app = createHealApp({
        kube,
        externalArtifacts: createExternalArtifactClient({
          kubeConfig: opts.kubeConfigFor(name),
          requestTimeoutMs: config.kubeRequestTimeoutMs,
        }),
        clock,
        logger,
        config,
      });
      break;
  }
  const running: RunningServer = await listen(app, {
    port: 0,
    host: '127.0.0.1',
    logger,
    drainTimeoutMs: 2000,
  });
  return {
    name,
    index,
    url: `http://127.0.0.1:${running.port}/`,
    config,
    close: async () => {
      const closing = running.close();
      // Idle keep-alive sockets (the Broker's) would otherwise hold close() until they time out.
      running.server.closeAllConnections();
      await closing;
    },
  };
}
