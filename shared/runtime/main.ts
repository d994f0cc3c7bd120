// Start-up shared by every function's main.ts: validate config (fail fast), build the deps, listen,
// and drain on SIGTERM.

import type { Express } from 'express';
import { createKubeClient, loadKubeConfig } from '../kube/client.js';
import type { KubePort } from '../kube/port.js';
import { systemClock, type Clock } from './clock.js';
import { loadConfig, type FunctionConfig } from './env.js';
import { createLogger, type Logger } from './logger.js';
import { exitOnSignals, listen } from './serve.js';

export interface MainContext {
  readonly config: FunctionConfig;
  readonly logger: Logger;
  readonly kube: KubePort;
  readonly clock: Clock;
  readonly isReady: () => boolean;
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
  // Built on first use: the dead-letter function never talks to Kubernetes.
  let kube: KubePort | undefined;
  const getKube = (): KubePort => {
    kube ??= createKubeClient({
      kubeConfig: loadKubeConfig(
        config.kubeconfigPath !== undefined ? { kubeconfigPath: config.kubeconfigPath } : {},
      ),
      fieldManager: `source-watcher-recovery-${name}`,
      requestTimeoutMs: config.kubeRequestTimeoutMs,
    });
    return kube;
  };
  let draining = false;
  let app: Express;
  try {
    app = build({
      config,
      logger,
      get kube() {
        return getKube();
      },
      clock: systemClock,
      isReady: () => !draining,
    });
  } catch (e) {
    logger.fatal(
      { err: { message: e instanceof Error ? e.message : String(e) } },
      'start-up failed',
    );
    process.exit(1);
  }
  const running = await listen(app, { port: config.port, logger });
  exitOnSignals(running, logger, () => {
    draining = true;
  });
  logger.info({ port: running.port, mode: config.recovery.mode }, 'listening');
}
