// `npm start -- --kubeconfig PATH`: the functions and the Knative emulation (Broker routed by the
// shipped Triggers, ApiServerSource, PingSource adapter) against a real cluster and its real
// source-watcher, on the real clock, until interrupted. No simulator runs.

import * as k8s from '@kubernetes/client-node';
import { createKnativeEmulation, type BrokerTuning } from './knative/index.js';
import { FUNCTION_NAMES, startFunctions } from './functions.js';
import { systemTimerClock } from '../../shared/runtime/clock.js';

/** The Broker's delivery on the real clock: retries wait on the clock at Knative's delays. */
export const REAL_CLOCK_BROKER: BrokerTuning = { retryOn: 'clock' };

export async function runAgainstCluster(
  kubeconfigPath: string,
  env: Record<string, string>,
  say: (line: string) => void,
): Promise<void> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  say(
    `source-watcher recovery against ${kc.getCurrentCluster()?.server ?? 'the cluster'} (Ctrl-C to stop)`,
  );
  const clock = systemTimerClock();
  const knative = createKnativeEmulation({
    clock,
    kubeConfig: kc,
    // On the real clock the Broker redelivers on Knative's schedule (1 s, 2 s, 4 s ... for the
    // Triggers' PT1S), not 1000 times faster (docs/adr/0041-knative-retry-schedule.md).
    brokerOptions: REAL_CLOCK_BROKER,
  });
  await knative.startBroker();
  const functions = await startFunctions({
    replicas: 1,
    clock,
    kubeConfigFor: () => kc,
    brokerUrl: knative.broker.ingressUrl,
    env,
    logLevel: process.env['LOG_LEVEL'] ?? 'info',
    logDestination: undefined,
  });
  for (const name of FUNCTION_NAMES) {
    knative.broker.setSubscriber(
      name,
      functions.filter((f) => f.name === name).map((f) => f.url),
    );
  }
  await knative.startSources();
  for (const f of functions) say(`${f.name} listening on ${f.url}`);
  say(`Broker ingress: ${knative.broker.ingressUrl}`);
  await new Promise<void>((resolve) => {
    const stop = (): void => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  say('stopping ...');
  await knative.stop();
  await Promise.allSettled(functions.map((f) => f.close()));
  clock.stop();
}
