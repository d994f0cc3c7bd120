// Runs one function's createApp on 127.0.0.1 with real deps: the product's Kubernetes adapter
// pointed at the test API server (through a recording proxy) as the function's own
// ServiceAccount (RBAC enforced: test/support/identities.ts), a settable clock and a silent logger.

import type { Express } from 'express';
import type { KubeConfig } from '@kubernetes/client-node';
import { createKubeClient } from '../../shared/kube/client.js';
import type { KubePort } from '../../shared/kube/port.js';
import type { Clock } from '../../shared/runtime/clock.js';
import { loadConfig, type FunctionConfig } from '../../shared/runtime/env.js';
import { createLogger, type Logger } from '../../shared/runtime/logger.js';
import { startHttp, type Started } from './http-events.js';
import { createApp as createDetectApp } from '../../functions/detect/app.js';
import { createAlarmFollowUps } from '../../functions/detect/alarm.js';
import { createBrokerEmitter } from '../../shared/runtime/broker-emitter.js';
import { asFunction } from './identities.js';

/** A clock the test sets by hand. */
export class SettableClock implements Clock {
  constructor(public t: number) {}
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

export interface CommonDeps {
  readonly kube: KubePort;
  readonly clock: SettableClock;
  readonly logger: Logger;
  readonly config: FunctionConfig;
}

/**
 * The function tests are written against the reference driver's 30 s time rule (DESIGN §3); the
 * product's default (2m30s) and early detection run end to end in test/e2e.
 */
export function testConfig(env: Record<string, string> = {}): FunctionConfig {
  return loadConfig({ LOG_LEVEL: 'silent', RECOVERY_GRACE_PERIOD: '30s', ...env });
}

export function commonDeps(opts: {
  /** The cluster (the proxy or the API server); the function calls it with its own token. */
  kubeConfig: KubeConfig;
  /** The function: detect, force-drift or surface-stalled (its ServiceAccount). */
  name: string;
  clock: SettableClock;
  env?: Record<string, string>;
  logger?: Logger;
}): CommonDeps {
  const config = testConfig(opts.env);
  return {
    kube: createKubeClient({
      kubeConfig: asFunction(opts.kubeConfig, opts.name, opts.env),
      fieldManager: `test-${opts.name}`,
      requestTimeoutMs: 5000,
    }),
    clock: opts.clock,
    logger: opts.logger ?? createLogger({ name: opts.name, level: 'silent' }),
    config,
  };
}

export async function serve(app: Express): Promise<Started> {
  return startHttp(app);
}

/**
 * detect as deployed, on 127.0.0.1: the product's adapter with `kubeConfig` (a proxy-tagged one),
 * emitting to `sinkUrl`, with its real follow-up alarm.
 */
export async function startDetectServer(opts: {
  kubeConfig: KubeConfig;
  clock: SettableClock;
  sinkUrl: string;
  env?: Record<string, string>;
  logger?: Logger;
}): Promise<Started> {
  const base = commonDeps({
    kubeConfig: opts.kubeConfig,
    name: 'detect',
    clock: opts.clock,
    ...(opts.env !== undefined ? { env: opts.env } : {}),
    ...(opts.logger !== undefined ? { logger: opts.logger } : {}),
  });
  return serve(
    createDetectApp({
      ...base,
      emitter: createBrokerEmitter({ url: opts.sinkUrl }),
      followUps: createAlarmFollowUps({ kube: base.kube, clock: opts.clock, config: base.config }),
    }),
  );
}
