// Starts functions in this process: the app of apps.ts on 127.0.0.1 (serve.ts). One function for a
// test (startFunction), or every function as users run them, N replicas each (startFunctions).

import { KubeConfig } from '@kubernetes/client-node';
import type { KubePort } from '../../../shared/kube/port.js';
import { systemClock, type Clock } from '../../../shared/runtime/clock.js';
import type { WaitClock } from '../../../shared/kube/in-place-retry.js';
import { loadConfig, type FunctionConfig } from '../../../shared/runtime/env.js';
import { createLogger, type Logger } from '../../../shared/runtime/logger.js';
import type { Metrics } from '../../../shared/runtime/metrics.js';
import {
  countingApiErrors,
  countingDeliveries,
  countingRefusals,
  startMetrics,
} from '../../../shared/runtime/metrics-start.js';
import type { pino } from 'pino';
import { functionKubeConfigFor, hasOwnCredentials } from '../../support/identities.js';
import {
  buildFunctionApp,
  FUNCTION_NAMES,
  functionKubeClient,
  senderAuthFor,
  type FunctionName,
} from './apps.js';
import type { SenderAuth } from '../../../shared/runtime/sender-auth.js';
import { serve, type Served } from './serve.js';
import { testConfig } from './test-deps.js';
import { RECOVERY_NAMESPACE } from '../../support/manifests.js';

/**
 * Whose credentials a function calls the API server with.
 * - 'test-identity' (the suites' default): kubeConfig as is when it carries credentials of its
 *   own (a ServiceAccount's token, a kubeconfig file's, the log-hygiene suite's marker
 *   credentials); otherwise the function's own ServiceAccount (test/support/identities.ts, inside
 *   a vitest run only).
 * - 'as-given' (`npm start -- --kubeconfig`): exactly kubeConfig, whatever its user holds (a
 *   token, a client certificate, an exec plugin, or nothing when a proxy in front of the API
 *   server authenticates, as `kubectl proxy` does). No test identity is looked up.
 */
export type FunctionCredentials = 'test-identity' | 'as-given';

export interface StartFunctionOptions {
  readonly fn: FunctionName;
  /** The cluster (the API server or a proxy), seen through `credentials`. */
  readonly kubeConfig?: KubeConfig;
  /** Default 'test-identity'. */
  readonly credentials?: FunctionCredentials;
  /**
   * A Kubernetes client of the caller's own (a bench's counting one) instead of the product's on
   * kubeConfig (then kubeConfig is needed only by heal-external-artifacts).
   */
  readonly kube?: KubePort;
  readonly clock: Clock;
  /**
   * The clock the function's API clients sit out a Retry-After on (shared/kube/in-place-retry.ts);
   * default `clock`. The system passes `clock` with its waits counted (its settle ends when only
   * waits on the virtual clock are left).
   */
  readonly apiClock?: WaitClock;
  /** Default: the function tests' testConfig(env). */
  readonly config?: FunctionConfig;
  readonly env?: Record<string, string>;
  /** Per-request timeout of the adapter (default 5 s). */
  readonly requestTimeoutMs?: number;
  /** Default: silent. */
  readonly logger?: Logger;
  /** Where detect posts action events. Required for detect. */
  readonly sinkUrl?: string;
  /** The sender check; default: built from config (RECOVERY_AUTH) as main.ts does. */
  readonly senderAuth?: SenderAuth;
  /** The metrics port, as main.ts builds it (deliveries counted, shut down on close). */
  readonly metrics?: Metrics;
}

export interface RunningFunction extends Served {
  readonly fn: FunctionName;
  readonly kube: KubePort;
  readonly config: FunctionConfig;
  /** The sender check it runs (RECOVERY_AUTH=oidc), for its review count. */
  readonly senderAuth: SenderAuth | undefined;
}

export async function startFunction(opts: StartFunctionOptions): Promise<RunningFunction> {
  const given = opts.kubeConfig ?? (opts.kube !== undefined ? new KubeConfig() : undefined);
  if (given === undefined) throw new Error(`${opts.fn} needs a kubeConfig or a kube client`);
  const needsIdentity =
    opts.credentials !== 'as-given' &&
    opts.fn !== 'dead-letter' &&
    (opts.kube === undefined || opts.fn === 'heal-external-artifacts') &&
    !hasOwnCredentials(given);
  const kubeConfig = needsIdentity ? await functionKubeConfigFor(given, opts.fn, opts.env) : given;
  const requestTimeoutMs = opts.requestTimeoutMs ?? 5000;
  const config = opts.config ?? testConfig(opts.env);
  const logger = opts.logger ?? createLogger({ name: opts.fn, level: 'silent' });
  const client =
    opts.kube ??
    functionKubeClient(opts.fn, kubeConfig, opts.apiClock ?? opts.clock, requestTimeoutMs);
  const kube = opts.metrics !== undefined ? countingApiErrors(client, opts.metrics) : client;
  const checked =
    opts.fn === 'dead-letter'
      ? undefined
      : (opts.senderAuth ?? senderAuthFor(config, kubeConfig, requestTimeoutMs));
  // As runMain wires it: refused senders counted (docs/adr/0059).
  const senderAuth =
    checked !== undefined && opts.metrics !== undefined
      ? countingRefusals(checked, opts.metrics)
      : checked;
  const app = buildFunctionApp(opts.fn, {
    kubeConfig,
    kube,
    requestTimeoutMs,
    clock: opts.clock,
    ...(opts.apiClock !== undefined ? { apiClock: opts.apiClock } : {}),
    logger,
    config,
    ...(opts.sinkUrl !== undefined ? { sinkUrl: opts.sinkUrl } : {}),
    ...(senderAuth !== undefined ? { senderAuth } : {}),
    ...(opts.metrics !== undefined ? { metrics: opts.metrics } : {}),
  });
  if (opts.metrics === undefined) {
    const served = await serve(app, logger);
    return { ...served, fn: opts.fn, kube, config, senderAuth };
  }
  const metrics = opts.metrics;
  const served = await serve(countingDeliveries(opts.fn, app, metrics), logger);
  const close = async (): Promise<void> => {
    await served.close();
    await metrics.shutdown();
  };
  return { ...served, close, fn: opts.fn, kube, config, senderAuth };
}

/** The in-process functions the benches drive. */
export const BENCH_FUNCTIONS = ['detect', 'force-drift', 'surface-stalled'] as const;

/**
 * The benches' functions with the product's defaults (loadConfig), each on the client
 * `kubeOf(fn, clock)` gives (e.g. the product's on a proxy kubeconfig tagged with its name); detect posts its action
 * events to `sinkUrl`; `env` on top of the defaults.
 */
export async function startAsDeployed(
  kubeOf: (fn: FunctionName, clock: Clock) => KubePort,
  sinkUrl: string,
  clock: Clock = systemClock,
  env: Readonly<Record<string, string>> = {},
): Promise<RunningFunction[]> {
  const config = loadConfig({
    K_SINK: sinkUrl,
    LOG_LEVEL: 'silent',
    POD_NAMESPACE: RECOVERY_NAMESPACE,
    ...env,
  });
  const started: RunningFunction[] = [];
  try {
    for (const fn of BENCH_FUNCTIONS) {
      started.push(await startFunction({ fn, kube: kubeOf(fn, clock), clock, config, sinkUrl }));
    }
  } catch (e) {
    await closeAll(started);
    throw e;
  }
  return started;
}

/** Closes every function given (a failure to close one does not stop the others). */
export async function closeAll(functions: readonly Served[]): Promise<void> {
  await Promise.allSettled(functions.map((f) => f.close()));
}

/** The URL of the (first) running `fn`. */
export function urlOf(functions: readonly RunningFunction[], fn: FunctionName): string {
  const found = functions.find((f) => f.fn === fn);
  if (found === undefined) throw new Error(`${fn} is not running`);
  return found.url;
}

export interface FunctionReplica extends RunningFunction {
  readonly name: FunctionName;
  readonly index: number;
}

export interface StartFunctionsOptions {
  replicas: number;
  clock: Clock;
  /** As StartFunctionOptions.apiClock. */
  apiClock?: WaitClock;
  /** The KubeConfig a function's ServiceAccount would have (tagged per function by the proxy). */
  kubeConfigFor: (name: FunctionName) => KubeConfig;
  /** Default 'test-identity' (see FunctionCredentials). */
  credentials?: FunctionCredentials;
  brokerUrl: string;
  /** Extra environment (RECOVERY_MODE, RECOVERY_GRACE_PERIOD, KUBE_REQUEST_TIMEOUT_MS, ...). */
  env: Readonly<Record<string, string>>;
  /** One function's own environment on top of `env`. */
  envOf?: (name: FunctionName) => Readonly<Record<string, string>>;
  logLevel: string;
  logDestination: pino.DestinationStream | undefined;
}

/**
 * Every replica of every function as users run them: config from loadConfig, a pino logger;
 * on failure, closes what was started and rethrows.
 */
export async function startFunctions(opts: StartFunctionsOptions): Promise<FunctionReplica[]> {
  const replicas: FunctionReplica[] = [];
  try {
    for (const name of FUNCTION_NAMES) {
      for (let index = 0; index < opts.replicas; index++) {
        replicas.push(await startReplica(name, index, opts));
      }
    }
  } catch (e) {
    await closeAll(replicas);
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
    // The pod's name, which the container runtime gives a pod as HOSTNAME (reportingInstance of
    // our Events; the Services set no POD_NAME: Knative refuses fieldRef by default, ADR 66).
    HOSTNAME: `${name}-${index}`,
    // Knative Serving sets K_SERVICE to the Service's name (it names the OIDC audience).
    K_SERVICE: name,
    // The namespace the pod runs in (the ServiceAccount namespace file in a real pod).
    POD_NAMESPACE: RECOVERY_NAMESPACE,
    ...opts.env,
    ...opts.envOf?.(name),
    LOG_LEVEL: opts.logLevel,
    BROKER_URL: opts.brokerUrl,
  });
  const logger: Logger = createLogger({
    name,
    level: config.logLevel,
    ...(opts.logDestination !== undefined ? { destination: opts.logDestination } : {}),
  }).child({ replica: index });
  const running = await startFunction({
    fn: name,
    kubeConfig: opts.kubeConfigFor(name),
    ...(opts.credentials !== undefined ? { credentials: opts.credentials } : {}),
    clock: opts.clock,
    ...(opts.apiClock !== undefined ? { apiClock: opts.apiClock } : {}),
    config,
    requestTimeoutMs: config.kubeRequestTimeoutMs,
    logger,
    sinkUrl: opts.brokerUrl,
    metrics: await startMetrics(name, config, logger),
  });
  return { ...running, name, index };
}
