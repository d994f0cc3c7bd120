// The Knative emulation for end-to-end tests: one Broker (ingress + Triggers from knative/), an
// ApiServerSource on ArtifactGenerators and the PingSource adapter, wired together against the
// test API server and a virtual clock.
//
//   const knative = createKnativeEmulation({ kubeConfig, clock, subscribers: {
//     detect: ['http://127.0.0.1:4001'], 'force-drift': [...], 'surface-stalled': [...] } });
//   await knative.start();           // functions post their events to knative.ingressUrl
//   ...; await knative.idle();       // settle between clock steps

import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import type { PingSource } from '../../../shared/kube/port.js';
import { ApiServerSource } from './apiserver-source.js';
import type { ApiServerSourceOptions } from './apiserver-source.js';
import { Broker } from './broker.js';
import type { BrokerOptions } from './broker-types.js';
import type { EmuClock } from './clock.js';
import { loadKnativeManifests } from './manifests.js';
import type { TriggerSpec } from './manifests.js';
import { PingScheduler } from './ping-scheduler.js';
import type { PingSchedulerOptions } from './ping-scheduler.js';

export { ApiServerSource, AG_RESOURCE, EA_RESOURCE } from './apiserver-source.js';
export type { ApiServerSourceOptions, SourceSendRecord } from './apiserver-source.js';
export { Broker, BROKER_TTL, isRedeliverable, retryDelayMs } from './broker.js';
export type * from './broker-types.js';
export type { EmuClock } from './clock.js';
export type { AnyEvent } from './cloudevent-http.js';
export { CronError, nextFire, parseSchedule } from './cron.js';
export type { CronSchedule } from './cron.js';
export { startEventRecorder } from './event-recorder.js';
export type { EventRecorder, RecordedRequest, RecorderAnswer } from './event-recorder.js';
export { loadKnativeManifests } from './manifests.js';
export type { DeliverySpec, Destination, KnativeManifests, TriggerSpec } from './manifests.js';
export { makePingEvent, pingEventSource, PingScheduler } from './ping-scheduler.js';
export type {
  PingFireRecord,
  PingRejection,
  PingSchedulerOptions,
  ScheduledPing,
} from './ping-scheduler.js';

export const RECOVERY_NAMESPACE = 'source-watcher-recovery';
export const BROKER_NAME = 'default';
/** The repository root: a relative manifestsDir is read from here, not from the working directory. */
const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

export interface KnativeEmulationOptions {
  kubeConfig: KubeConfig;
  clock: EmuClock;
  /** Knative Service name -> replica URLs (detect, force-drift, surface-stalled, dead-letter). */
  subscribers: Record<string, string[]>;
  /**
   * Where the Triggers, the Broker and the static PingSources come from (default 'knative',
   * relative to the repository root).
   */
  manifestsDir?: string;
  /** Replaces the Triggers read from the manifests. */
  triggers?: TriggerSpec[];
  /** Replaces the static PingSources read from the manifests. */
  staticPingSources?: PingSource[];
  /** Namespace of the Broker (default source-watcher-recovery). */
  namespace?: string;
  brokerOptions?: Partial<Omit<BrokerOptions, 'triggers' | 'subscribers'>>;
  apiServerSourceOptions?: Partial<Omit<ApiServerSourceOptions, 'kubeConfig' | 'sinkUrl'>>;
  pingOptions?: Partial<Omit<PingSchedulerOptions, 'clock' | 'sinkUrl' | 'kubeConfig'>>;
  /** Structured log sink shared by the three parts. */
  log?: (msg: string, fields: Record<string, unknown>) => void;
}

export interface IdleOptions {
  /** Give up (throw) after this many real ms (default 30 000). */
  timeoutMs?: number;
}

export interface KnativeEmulation {
  readonly broker: Broker;
  readonly apiServerSource: ApiServerSource;
  readonly pings: PingScheduler;
  /** The Broker ingress URL (K_SINK for the functions); after start(). */
  readonly ingressUrl: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /**
   * Settles: repeats {both watches caught up with the API server, every source send done, the
   * Broker idle} until a round sees no new watch event, ingest or delivery. Work on the virtual
   * clock (PingSource ticks, pick-ups) is not waited for: it happens when the clock advances.
   */
  idle(opts?: IdleOptions): Promise<void>;
  /** A number that grows with every watch event, ingest and delivery attempt (for combined settling). */
  activity(): number;
}

export function createKnativeEmulation(opts: KnativeEmulationOptions): KnativeEmulation {
  const namespace = opts.namespace ?? RECOVERY_NAMESPACE;
  const needsManifests = opts.triggers === undefined || opts.staticPingSources === undefined;
  const manifests = needsManifests
    ? loadKnativeManifests(resolve(REPO_ROOT, opts.manifestsDir ?? 'knative'), namespace)
    : undefined;
  const log = opts.log;
  const broker = new Broker({
    namespace,
    name: BROKER_NAME,
    clock: opts.clock,
    ...(log ? { log } : {}),
    ...opts.brokerOptions,
    triggers: opts.triggers ?? manifests?.triggers ?? [],
    subscribers: opts.subscribers,
  });
  const sinkUrl = (): string => broker.ingressUrl;
  const apiServerSource = new ApiServerSource({
    clock: opts.clock,
    ...(log ? { log } : {}),
    ...opts.apiServerSourceOptions,
    kubeConfig: opts.kubeConfig,
    sinkUrl,
  });
  const pings = new PingScheduler({
    staticSources: opts.staticPingSources ?? manifests?.pingSources ?? [],
    ...(log ? { log } : {}),
    ...opts.pingOptions,
    clock: opts.clock,
    kubeConfig: opts.kubeConfig,
    sinkUrl,
  });
  let started = false;

  const activity = (): number =>
    apiServerSource.received + pings.received + broker.stats.ingested + broker.deliveries.length;

  return {
    broker,
    apiServerSource,
    pings,
    get ingressUrl() {
      return broker.ingressUrl;
    },
    async start() {
      if (started) return;
      await broker.start();
      try {
        await apiServerSource.start();
        await pings.start();
      } catch (e) {
        await pings.stop();
        await apiServerSource.stop();
        await broker.close();
        throw e;
      }
      started = true;
    },
    async stop() {
      started = false;
      await pings.stop();
      await apiServerSource.stop();
      await broker.close();
    },
    async idle(idleOpts: IdleOptions = {}) {
      const deadline = Date.now() + (idleOpts.timeoutMs ?? 30_000);
      for (;;) {
        const before = activity();
        const left = (): number => Math.max(1, deadline - Date.now());
        await apiServerSource.caughtUp(left());
        await pings.caughtUp(left());
        await apiServerSource.idle();
        await pings.idle();
        await broker.idle();
        if (activity() === before) return;
        if (Date.now() > deadline) throw new Error('knative emulation did not settle in time');
      }
    },
    activity,
  };
}
