// What a function test gives a function: a clock it sets by hand, the reference driver's 30 s
// time rule, a silent logger and the product's adapter as the function's own ServiceAccount.

import type { KubeConfig } from '@kubernetes/client-node';
import type { KubePort } from '../../../shared/kube/port.js';
import {
  deadlineOn,
  type Clock,
  type Deadline,
  type DeadlineError,
} from '../../../shared/runtime/clock.js';
import { loadConfig, type FunctionConfig } from '../../../shared/runtime/env.js';
import { createLogger, type Logger } from '../../../shared/runtime/logger.js';
import { asFunction } from '../../support/identities.js';
import { functionKubeClient, type FunctionName } from './apps.js';
import { RECOVERY_NAMESPACE } from '../../support/manifests.js';

/**
 * A clock the test sets by hand. Setting `t` or advance() moves the wall and the monotonic clock
 * together; jumpWall() steps the wall alone. Deadlines fire in advance(), on the monotonic clock.
 */
export class SettableClock implements Clock {
  #wallOffset = 0;
  readonly #deadlines = new Set<{ at: number; fire: () => void }>();
  constructor(public t: number) {}
  now(): number {
    return this.t;
  }
  monotonicMs(): number {
    return this.t - this.#wallOffset;
  }
  deadline(ms: number, onExpire?: (reason: DeadlineError) => void): Deadline {
    return deadlineOn(
      ms,
      (fire) => {
        const entry = { at: this.monotonicMs() + ms, fire };
        this.#deadlines.add(entry);
        return () => this.#deadlines.delete(entry);
      },
      onExpire,
    );
  }
  advance(ms: number): void {
    this.t += ms;
    const now = this.monotonicMs();
    for (const d of [...this.#deadlines]) {
      if (d.at > now) continue;
      this.#deadlines.delete(d);
      d.fire();
    }
  }
  /** Steps the wall reading (NTP, an operator) without moving the monotonic clock. */
  jumpWall(ms: number): void {
    this.t += ms;
    this.#wallOffset += ms;
  }
  /** Deadlines armed and not yet fired or cleared (for tests). */
  get pendingDeadlines(): number {
    return this.#deadlines.size;
  }
}

/**
 * The function tests are written against the reference driver's 30 s time rule (docs/design.md §3); the
 * product's default (2m30s) and early detection run end to end in test/e2e.
 */
export function testConfig(env: Record<string, string> = {}): FunctionConfig {
  return loadConfig({
    LOG_LEVEL: 'silent',
    RECOVERY_GRACE_PERIOD: '30s',
    POD_NAMESPACE: RECOVERY_NAMESPACE,
    ...env,
  });
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
      opts.clock,
      5000,
    ),
    clock: opts.clock,
    logger: opts.logger ?? createLogger({ name: opts.name, level: 'silent' }),
    config: testConfig(opts.env),
  };
}
