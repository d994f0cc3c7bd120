// What a function test gives a function: a clock it sets by hand, the reference driver's 30 s
// time rule, a silent logger and the product's adapter as the function's own ServiceAccount.

import type { KubeConfig } from '@kubernetes/client-node';
import type { KubePort } from '../../../shared/kube/port.js';
import type { Clock } from '../../../shared/runtime/clock.js';
import { loadConfig, type FunctionConfig } from '../../../shared/runtime/env.js';
import { createLogger, type Logger } from '../../../shared/runtime/logger.js';
import { asFunction } from '../../support/identities.js';
import { functionKubeClient, type FunctionName } from './apps.js';

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

/**
 * The function tests are written against the reference driver's 30 s time rule (DESIGN §3); the
 * product's default (2m30s) and early detection run end to end in test/e2e.
 */
export function testConfig(env: Record<string, string> = {}): FunctionConfig {
  return loadConfig({ LOG_LEVEL: 'silent', RECOVERY_GRACE_PERIOD: '30s', ...env });
}

export interface CommonDeps {
  readonly kube: KubePort;
  readonly clock: SettableClock;
  readonly logger: Logger;
  readonly config: FunctionConfig;
}

/** The deps of a createApp a test calls itself (with deps of its own added). */
export function commonDeps(opts: {
  /** The cluster (the proxy or the API server); the function calls it with its own token. */
  kubeConfig: KubeConfig;
  /** The function: detect, force-drift, surface-stalled or heal-external-artifacts. */
  name: string;
  clock: SettableClock;
  env?: Record<string, string>;
  logger?: Logger;
}): CommonDeps {
  return {
    kube: functionKubeClient(
      opts.name as FunctionName,
      asFunction(opts.kubeConfig, opts.name, opts.env),
      5000,
    ),
    clock: opts.clock,
    logger: opts.logger ?? createLogger({ name: opts.name, level: 'silent' }),
    config: testConfig(opts.env),
  };
}
