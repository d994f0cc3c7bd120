// The Knative emulation, the one assembly every suite runs (the e2e system, `npm start`, the
// benches and test/integration/knative-emulation.test.ts): one Broker routed by the Triggers in
// knative/, the ApiServerSources on ArtifactGenerators and on ExternalArtifacts, and the
// PingSource adapter (the static PingSources from knative/ plus the ones created at run time).
// Each source may call the API server as its own client: the ApiServerSource as its
// ServiceAccount (checked against its RBAC), the PingSource adapter as Knative's controller.
//
//   const knative = createKnativeEmulation({ kubeConfig, clock, subscribers: {
//     detect: ['http://127.0.0.1:4001'], 'force-drift': [...], 'surface-stalled': [...] } });
//   await knative.start();           // functions post to knative.broker.ingressUrl
//   ...; await knative.idle();       // settle between clock steps
//
// A system whose subscribers listen only once they know the ingress URL starts in two steps:
// startBroker(), then broker.setSubscriber(...) per Service, then startSources().

import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { checkApiServerSourceAccess, type ApiServerSourceAccessCheck } from './access-check.js';
import { AG_RESOURCE, ApiServerSource, EA_RESOURCE } from './apiserver-source.js';
import { Broker } from './broker.js';
import type { BrokerOptions } from './broker-types.js';
import type { EmuClock } from './clock.js';
import type { CatchUp } from './list-watch.js';
import { loadKnativeManifests, type KnativeManifests } from './manifests.js';
import { PingScheduler } from './ping-scheduler.js';
import { brokerAudience } from './oidc-identity.js';
import { OidcTokenProvider } from './oidc-tokens.js';
import type { PingSchedulerOptions } from './ping-scheduler.js';

export const RECOVERY_NAMESPACE = 'source-watcher-recovery';
export const BROKER_NAME = 'default';
/** The repository root: knative/ is read from here, not from the working directory. */
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

export interface KnativeEmulationOptions {
  clock: EmuClock;
  /** The API server of both sources, unless one has its own KubeConfig below. */
  kubeConfig?: KubeConfig;
  /** The ApiServerSources' client (their ServiceAccount); default kubeConfig. */
  apiServerSourceKubeConfig?: KubeConfig;
  /** The PingSource adapter's client (Knative's controller); default kubeConfig. */
  pingSourceKubeConfig?: KubeConfig;
  /**
   * The client of the harness's catch-up lists (idle, settle): the harness's own reads, so they
   * neither pass for the adapters' calls nor meet the adapters' faults (docs/adr/0060). Default:
   * each source's own client.
   */
  catchUpKubeConfig?: KubeConfig;
  /** When given, the ApiServerSources start only if their ServiceAccount may get, list and watch. */
  apiServerSourceAccessCheck?: ApiServerSourceAccessCheck;
  /**
   * Knative Service name -> replica URLs (detect, force-drift, surface-stalled, dead-letter);
   * default none, mapped later with broker.setSubscriber.
   */
  subscribers?: Record<string, string[]>;
  brokerOptions?: Partial<Omit<BrokerOptions, 'triggers' | 'subscribers'>>;
  pingOptions?: Partial<Omit<PingSchedulerOptions, 'clock' | 'sinkUrl' | 'kubeConfig'>>;
  /** Structured log sink shared by the parts. */
  log?: (msg: string, fields: Record<string, unknown>) => void;
  /**
   * Eventing's authentication-oidc on (docs/adr/0056): the Broker sends each delivery with a
   * token of its Trigger's OIDC identity for the subscriber's audience, and the sources send
   * theirs for the Broker's audience; identities and tokens are made with this client (Knative's
   * controller) on the real API server.
   */
  oidc?: { kubeConfig: KubeConfig };
  /**
   * The install it emulates Knative for: its namespace (the Broker's, the PingSources') and its
   * Triggers, Brokers and PingSources, e.g. from a render with another `namespace:` (ADR 63).
   * Default: knative/ as it is, in source-watcher-recovery.
   */
  install?: { namespace: string; manifests: KnativeManifests };
}

export interface IdleOptions {
  /** Give up (throw) after this many real ms (default 30 000). */
  timeoutMs?: number;
  /** How the source watches catch up (default: a fresh list each, listCatchUp). */
  catchUp?: CatchUp;
}

export interface KnativeEmulation {
  readonly broker: Broker;
  /** The ApiServerSource on ArtifactGenerators. */
  readonly apiServerSource: ApiServerSource;
  readonly pings: PingScheduler;
  /** startBroker() then startSources(); stops what started when one fails. */
  start(): Promise<void>;
  /** The ingress first: the functions need its URL, and the sources must not send before. */
  startBroker(): Promise<void>;
  /** Then the ApiServerSources and the PingSource adapter (after the subscribers are mapped). */
  startSources(): Promise<void>;
  /** Stops what started (safe after a failed or partial start). */
  stop(): Promise<void>;
  /**
   * Settles: repeats {every source watch caught up with the API server, every source send done,
   * the Broker idle} until a round sees no new watch event, ingest or delivery. Work on the
   * virtual clock (PingSource ticks, pick-ups) is not waited for: it happens when the clock
   * advances.
   */
  idle(opts?: IdleOptions): Promise<void>;
  /** A number that grows with every watch event, ingest and delivery attempt (for combined settling). */
  activity(): number;
  /** The OIDC token provider when `oidc` is on. */
  readonly tokens: OidcTokenProvider | undefined;
}

function sourceKubeConfig(
  own: KubeConfig | undefined,
  shared: KubeConfig | undefined,
  what: string,
) {
  const kc = own ?? shared;
  if (kc === undefined) throw new Error(`createKnativeEmulation: no KubeConfig for the ${what}`);
  return kc;
}

export function createKnativeEmulation(opts: KnativeEmulationOptions): KnativeEmulation {
  // The Broker's namespace: the PingSource adapter follows only its PingSources (unless
  // pingOptions.namespace says otherwise), so ones left by other test files do not wake the clock.
  const namespace = opts.install?.namespace ?? RECOVERY_NAMESPACE;
  const manifests =
    opts.install?.manifests ?? loadKnativeManifests(resolve(REPO_ROOT, 'knative'), namespace);
  const log = opts.log;
  const logOpt = log ? { log } : {};
  const tokens =
    opts.oidc !== undefined
      ? new OidcTokenProvider({ kubeConfig: opts.oidc.kubeConfig, namespace })
      : undefined;
  const toBroker = brokerAudience(namespace, BROKER_NAME);
  const broker = new Broker({
    namespace,
    name: BROKER_NAME,
    clock: opts.clock,
    ...logOpt,
    ...opts.brokerOptions,
    ...(tokens !== undefined ? { oidc: tokens } : {}),
    triggers: manifests.triggers,
    subscribers: opts.subscribers ?? {},
  });
  const sinkUrl = (): string => broker.ingressUrl;
  const sourceKc = sourceKubeConfig(
    opts.apiServerSourceKubeConfig,
    opts.kubeConfig,
    'ApiServerSource',
  );
  const catchUpOpt = opts.catchUpKubeConfig ? { catchUpKubeConfig: opts.catchUpKubeConfig } : {};
  let sourceSeed = 0;
  const sourceOn = (resource: typeof AG_RESOURCE, name: string): ApiServerSource =>
    new ApiServerSource({
      clock: opts.clock,
      ...logOpt,
      ...catchUpOpt,
      seed: ++sourceSeed,
      kubeConfig: sourceKc,
      sinkUrl,
      resource,
      ...(tokens !== undefined ? { oidc: { tokens, name, audience: toBroker } } : {}),
    });
  // Named as in knative/ (their OIDC identities follow the names).
  const apiServerSource = sourceOn(AG_RESOURCE, 'artifactgenerators');
  const externalArtifactSource = sourceOn(EA_RESOURCE, 'externalartifacts');
  const sources = [apiServerSource, externalArtifactSource];
  const pings = new PingScheduler({
    namespace,
    staticSources: manifests.pingSources,
    ...logOpt,
    ...catchUpOpt,
    ...opts.pingOptions,
    ...(tokens !== undefined ? { oidc: { tokens, audience: toBroker } } : {}),
    clock: opts.clock,
    kubeConfig: sourceKubeConfig(opts.pingSourceKubeConfig, opts.kubeConfig, 'PingSource adapter'),
    sinkUrl,
  });
  let started = { broker: false, sources: false, pings: false };

  const activity = (): number =>
    sources.reduce((n, s) => n + s.received, 0) +
    pings.received +
    broker.stats.ingested +
    broker.deliveries.length;

  const emulation: KnativeEmulation = {
    broker,
    apiServerSource,
    pings,
    async start() {
      try {
        await emulation.startBroker();
        await emulation.startSources();
      } catch (e) {
        await emulation.stop();
        throw e;
      }
    },
    async startBroker() {
      if (started.broker) return;
      await broker.start();
      started = { ...started, broker: true };
    },
    async startSources() {
      if (started.pings) return;
      if (opts.apiServerSourceAccessCheck !== undefined) {
        await checkApiServerSourceAccess({
          resources: [AG_RESOURCE, EA_RESOURCE],
          ...opts.apiServerSourceAccessCheck,
        });
      }
      // Marked first: stop() stops a source whose start failed half-way.
      started = { ...started, sources: true };
      for (const s of sources) await s.start();
      await pings.start();
      started = { ...started, pings: true };
    },
    async stop() {
      if (started.pings) await pings.stop();
      if (started.sources) for (const s of [...sources].reverse()) await s.stop();
      if (started.broker) await broker.close();
      started = { broker: false, sources: false, pings: false };
    },
    async idle(idleOpts: IdleOptions = {}) {
      const deadline = Date.now() + (idleOpts.timeoutMs ?? 30_000);
      const left = (): number => Math.max(1, deadline - Date.now());
      for (;;) {
        const before = activity();
        for (const s of sources) await s.caughtUp(left(), idleOpts.catchUp);
        await pings.caughtUp(left(), idleOpts.catchUp);
        for (const s of sources) await s.idle();
        await pings.idle();
        await broker.idle();
        if (activity() === before) return;
        if (Date.now() > deadline) throw new Error('knative emulation did not settle in time');
      }
    },
    activity,
    tokens,
  };
  return emulation;
}
