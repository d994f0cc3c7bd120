// `npm start -- --kubeconfig PATH`: the functions and the Knative emulation (Broker routed by the
// shipped Triggers, ApiServerSource, PingSource adapter) against a real cluster and its real
// source-watcher, on the real clock, until interrupted. No simulator runs.
//
// Every client is built from exactly the kubeconfig given, whatever its user holds (a token, a
// client certificate, an exec plugin, or nothing when a proxy such as `kubectl proxy` adds the
// credentials): no test identity, no vitest. An API server that does not answer yet is waited
// for (api-server-wait.ts).

import * as k8s from '@kubernetes/client-node';
import { createKnativeEmulation, type BrokerTuning } from './knative/index.js';
import { FUNCTION_NAMES, startFunctions, type Served } from './functions.js';
import { systemTimerClock } from '../../shared/runtime/clock.js';
import { hasOwnCredentials } from '../support/identities.js';
import { DEFAULT_WAIT_SECONDS, waitForApiServer } from './api-server-wait.js';

/** The Broker's delivery on the real clock: retries wait on the clock at Knative's delays. */
export const REAL_CLOCK_BROKER: BrokerTuning = { retryOn: 'clock' };

export interface RunAgainstClusterOptions {
  /** How long to wait for the API server to answer before giving up (default 180 s). */
  readonly waitSeconds?: number;
}

/** The kubeconfig file, loaded; a clear error when it cannot be read or names no cluster. */
export function loadGivenKubeConfig(kubeconfigPath: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  try {
    kc.loadFromFile(kubeconfigPath);
  } catch (err) {
    throw new Error(
      `cannot load the kubeconfig ${kubeconfigPath}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  if (kc.getCurrentCluster() === null) {
    throw new Error(`the kubeconfig ${kubeconfigPath} has no current context with a cluster`);
  }
  return kc;
}

export async function runAgainstCluster(
  kubeconfigPath: string,
  env: Record<string, string>,
  say: (line: string) => void,
  opts: RunAgainstClusterOptions = {},
): Promise<void> {
  const kc = loadGivenKubeConfig(kubeconfigPath);
  const server = kc.getCurrentCluster()?.server ?? '';
  const user = kc.getCurrentUser()?.name ?? '(none)';
  say(
    `source-watcher recovery against ${server} as kubeconfig user "${user}", credentials as given (Ctrl-C to stop)`,
  );
  // One Ctrl-C (or SIGTERM) stops the run at any stage; a second one is Node's default: exit now.
  let interrupted = false;
  let wake = (): void => undefined;
  const stopRequested = new Promise<void>((resolve) => {
    wake = resolve;
  });
  const onSignal = (): void => {
    interrupted = true;
    wake();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  await waitForApiServer({
    kubeConfig: kc,
    target: { server, user, hasCredentials: hasOwnCredentials(kc) },
    waitMs: (opts.waitSeconds ?? DEFAULT_WAIT_SECONDS) * 1000,
    say,
    stopped: () => interrupted,
  });
  if (interrupted) {
    say('interrupted while waiting for the API server');
    return;
  }
  say(`the API server at ${server} answers`);
  const clock = systemTimerClock();
  const knative = createKnativeEmulation({
    clock,
    kubeConfig: kc,
    // On the real clock the Broker redelivers on Knative's schedule (1 s, 2 s, 4 s ... for the
    // Triggers' PT1S), not 1000 times faster (docs/adr/0041-knative-retry-schedule.md).
    brokerOptions: REAL_CLOCK_BROKER,
  });
  let functions: readonly Served[] = [];
  try {
    await knative.startBroker();
    const replicas = await startFunctions({
      replicas: 1,
      clock,
      kubeConfigFor: () => kc,
      // Exactly the kubeconfig given: no test identity (that is the suites' default).
      credentials: 'as-given',
      brokerUrl: knative.broker.ingressUrl,
      env,
      logLevel: process.env['LOG_LEVEL'] ?? 'info',
      logDestination: undefined,
    });
    functions = replicas;
    for (const name of FUNCTION_NAMES) {
      knative.broker.setSubscriber(
        name,
        replicas.filter((f) => f.name === name).map((f) => f.url),
      );
    }
    await knative.startSources();
    for (const f of replicas) say(`${f.name} listening on ${f.url}`);
    say(`Broker ingress: ${knative.broker.ingressUrl}`);
    await stopRequested;
    say('stopping ...');
  } finally {
    await knative.stop();
    await Promise.allSettled(functions.map((f) => f.close()));
    clock.stop();
  }
  say('stopped');
}
