// The three functions in this process, built with their real createApp and the real Kubernetes
// adapter, each listening on 127.0.0.1. Used where the bench counts API calls (through the kube
// proxy) or times a sweep; the throughput, cold-start and memory rows run dist/ instead.

import type { KubeConfig } from '@kubernetes/client-node';
import type { KubePort } from '../../shared/kube/port.js';
import { createApp as createDetectApp } from '../../functions/detect/app.js';
import { createAlarmFollowUps } from '../../functions/detect/alarm.js';
import { createApp as createForceDriftApp } from '../../functions/force-drift/app.js';
import { createApp as createSurfaceStalledApp } from '../../functions/surface-stalled/app.js';
import { createKubeClient } from '../../shared/kube/client.js';
import { createBrokerEmitter } from '../../shared/runtime/broker-emitter.js';
import { systemClock, type Clock } from '../../shared/runtime/clock.js';
import { loadConfig } from '../../shared/runtime/env.js';
import { silentLogger } from '../../shared/runtime/logger.js';
import { startHttp, type Started } from '../support/http-events.js';

export interface InProcessFunctions {
  readonly detect: Started;
  readonly forceDrift: Started;
  readonly surfaceStalled: Started;
  close(): Promise<void>;
}

export type FunctionName = 'detect' | 'force-drift' | 'surface-stalled';

/** The function's real Kubernetes client, as its main.ts builds it, on `kubeConfig`. */
export function functionKubeClient(fn: FunctionName, kubeConfig: KubeConfig): KubePort {
  return createKubeClient({
    kubeConfig,
    fieldManager: `source-watcher-recovery-${fn}`,
    requestTimeoutMs: 30_000,
  });
}

/**
 * `kubeOf(name)` gives each function its client (e.g. on a proxy kubeconfig tagged with the
 * function's name); detect posts its action events to `sinkUrl`.
 */
export async function startInProcessFunctions(
  kubeOf: (fn: FunctionName) => KubePort,
  sinkUrl: string,
  clock: Clock = systemClock,
): Promise<InProcessFunctions> {
  const config = loadConfig({ K_SINK: sinkUrl, LOG_LEVEL: 'silent' });
  const logger = silentLogger();
  const detectKube = kubeOf('detect');
  const detect = await startHttp(
    createDetectApp({
      kube: detectKube,
      clock,
      logger,
      config,
      emitter: createBrokerEmitter({ url: sinkUrl }),
      followUps: createAlarmFollowUps({ kube: detectKube, clock, config }),
    }),
  );
  const forceDrift = await startHttp(
    createForceDriftApp({ kube: kubeOf('force-drift'), clock, logger, config }),
  );
  const surfaceStalled = await startHttp(
    createSurfaceStalledApp({ kube: kubeOf('surface-stalled'), clock, logger, config }),
  );
  return {
    detect,
    forceDrift,
    surfaceStalled,
    async close() {
      await Promise.all([detect.close(), forceDrift.close(), surfaceStalled.close()]);
    },
  };
}
