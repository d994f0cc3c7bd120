// The Knative side of the system: the Broker routed by the Triggers in knative/, the
// ApiServerSource on ArtifactGenerators and the PingSource adapter (the resync from knative/ plus
// the alarm detect creates at run time). It is the same wiring as createKnativeEmulation
// (test/harness/knative/index.ts), assembled from its exported parts because the two sources must
// call the API server as two different clients: the ApiServerSource as its ServiceAccount
// ('apiserversource', checked against its RBAC) and the PingSource adapter as Knative's own
// ('pingsource'), and createKnativeEmulation takes one KubeConfig for both.

import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import {
  AG_RESOURCE,
  ApiServerSource,
  EA_RESOURCE,
  BROKER_NAME,
  Broker,
  PingScheduler,
  RECOVERY_NAMESPACE,
  loadKnativeManifests,
  type BrokerOptions,
  type EmuClock,
} from '../knative/index.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** What the system lets a scenario change about the Broker's delivery. */
export type BrokerTuning = Partial<
  Pick<
    BrokerOptions,
    | 'duplicateProbability'
    | 'reorderMaxDelayMs'
    | 'seed'
    | 'replicaPick'
    | 'retryDelayScale'
    | 'retryOn'
    | 'defaultTimeoutMs'
  >
>;

export interface KnativeParts {
  readonly broker: Broker;
  readonly apiServerSource: ApiServerSource;
  /** The ApiServerSource on ExternalArtifacts (components/heal-external-artifacts). */
  readonly externalArtifactSource: ApiServerSource;
  readonly pings: PingScheduler;
  /** The ingress first: the functions need its URL, and the sources must not send before. */
  startBroker(): Promise<void>;
  /** Then the ApiServerSource and the PingSource adapter (after the subscribers are mapped). */
  startSources(): Promise<void>;
  stop(): Promise<void>;
  /** Both source watches caught up, every source send done, the Broker idle. */
  idle(timeoutMs: number): Promise<void>;
  /** Grows with every watch event, ingest and delivery attempt. */
  activity(): number;
}

/**
 * What Knative's ApiServerSource controller checks before it starts the adapter: a
 * SubjectAccessReview per verb (get, list, watch) on each watched resource for the source's
 * ServiceAccount. A denied verb keeps the source from starting (Knative reports it not ready).
 */
export interface ApiServerSourceAccessCheck {
  /** The controller's own credentials (the admin here). */
  controllerKubeConfig: KubeConfig;
  /** spec.serviceAccountName and the source's namespace. */
  serviceAccount: string;
  namespace: string;
  /** The watched resources (default: ArtifactGenerators). */
  resources?: readonly { group: string; plural: string }[];
}

export async function checkApiServerSourceAccess(check: ApiServerSourceAccessCheck): Promise<void> {
  const api = check.controllerKubeConfig.makeApiClient(AuthorizationV1Api);
  const user = `system:serviceaccount:${check.namespace}:${check.serviceAccount}`;
  for (const resource of check.resources ?? [AG_RESOURCE]) {
    const denied: string[] = [];
    for (const verb of ['get', 'list', 'watch']) {
      const review = await api.createSubjectAccessReview({
        body: {
          spec: {
            user,
            groups: ['system:serviceaccounts', `system:serviceaccounts:${check.namespace}`],
            resourceAttributes: { verb, group: resource.group, resource: resource.plural },
          },
        },
      });
      if (review.status?.allowed !== true) denied.push(verb);
    }
    if (denied.length > 0) {
      throw new Error(
        `ApiServerSource: ServiceAccount ${check.namespace}/${check.serviceAccount} may not ${denied.join(', ')} ` +
          `${resource.plural}.${resource.group}: the source does not start (insufficient permissions)`,
      );
    }
  }
}

export function createKnativeParts(opts: {
  clock: EmuClock;
  apiServerSourceKubeConfig: KubeConfig;
  pingSourceKubeConfig: KubeConfig;
  /** When given, the ApiServerSource starts only if its ServiceAccount may get, list and watch. */
  apiServerSourceAccessCheck?: ApiServerSourceAccessCheck;
  broker?: BrokerTuning;
  pingSeed?: number;
  log?: (msg: string, fields: Record<string, unknown>) => void;
}): KnativeParts {
  const manifests = loadKnativeManifests(resolve(REPO_ROOT, 'knative'), RECOVERY_NAMESPACE);
  const log = opts.log;
  const broker = new Broker({
    namespace: RECOVERY_NAMESPACE,
    name: BROKER_NAME,
    clock: opts.clock,
    ...(log ? { log } : {}),
    ...opts.broker,
    triggers: manifests.triggers,
    // Mapped once the function replicas listen (setSubscriber).
    subscribers: {},
  });
  const sinkUrl = (): string => broker.ingressUrl;
  const apiServerSource = new ApiServerSource({
    clock: opts.clock,
    ...(log ? { log } : {}),
    kubeConfig: opts.apiServerSourceKubeConfig,
    sinkUrl,
  });
  const externalArtifactSource = new ApiServerSource({
    clock: opts.clock,
    ...(log ? { log } : {}),
    kubeConfig: opts.apiServerSourceKubeConfig,
    sinkUrl,
    resource: EA_RESOURCE,
  });
  const pings = new PingScheduler({
    clock: opts.clock,
    kubeConfig: opts.pingSourceKubeConfig,
    // The adapter in the test only needs this product's PingSources; others left by other test
    // files must not wake the clock.
    namespace: RECOVERY_NAMESPACE,
    staticSources: manifests.pingSources,
    ...(opts.pingSeed !== undefined ? { seed: opts.pingSeed } : {}),
    ...(log ? { log } : {}),
    sinkUrl,
  });
  let started = { broker: false, apiServerSource: false, pings: false };

  const activity = (): number =>
    apiServerSource.received +
    externalArtifactSource.received +
    pings.received +
    broker.stats.ingested +
    broker.deliveries.length;

  return {
    broker,
    apiServerSource,
    externalArtifactSource,
    pings,
    async startBroker() {
      await broker.start();
      started = { ...started, broker: true };
    },
    async startSources() {
      if (opts.apiServerSourceAccessCheck !== undefined) {
        await checkApiServerSourceAccess({
          resources: [AG_RESOURCE, EA_RESOURCE],
          ...opts.apiServerSourceAccessCheck,
        });
      }
      await apiServerSource.start();
      await externalArtifactSource.start();
      started = { ...started, apiServerSource: true };
      await pings.start();
      started = { ...started, pings: true };
    },
    async stop() {
      if (started.pings) await pings.stop();
      if (started.apiServerSource) {
        await externalArtifactSource.stop();
        await apiServerSource.stop();
      }
      if (started.broker) await broker.close();
      started = { broker: false, apiServerSource: false, pings: false };
    },
    async idle(timeoutMs: number) {
      const deadline = Date.now() + timeoutMs;
      const left = (): number => Math.max(1, deadline - Date.now());
      for (;;) {
        const before = activity();
        await apiServerSource.caughtUp(left());
        await externalArtifactSource.caughtUp(left());
        await pings.caughtUp(left());
        await apiServerSource.idle();
        await externalArtifactSource.idle();
        await pings.idle();
        await broker.idle();
        if (activity() === before) return;
        if (Date.now() > deadline) throw new Error('knative emulation did not settle in time');
      }
    },
    activity,
  };
}
