// The whole product wired as users run it, on one machine, against a real API server, on one
// virtual clock (docs/adr/0011-e2e-harness.md):
//
//   source-watcher simulator ──┐                      ┌─► detect ×N ──emits──► Broker
//   ApiServerSource ───────────┼─► Broker (Triggers ──┼─► force-drift ×N
//   PingSource adapter ────────┘   from knative/)     ├─► surface-stalled ×N
//                                                     └─► dead-letter ×N
//
// Every API call goes through one recording, fault-injecting KubeProxy, tagged by its client:
// 'detect', 'force-drift', 'surface-stalled' (the product's adapter), 'apiserversource',
// 'pingsource' (the Knative adapters) and 'source-watcher' (the simulator). The functions and the
// ApiServerSource call with their own ServiceAccount's token (`serviceAccountTokens`), so the API
// server enforces the RBAC rendered from knative/; the PingSource adapter (Knative's own
// controller) and the simulator (source-watcher) call as the admin. The harness's own watches and
// reads go straight to the API server.
//
//   const system = await createSystem({ kubeConfig });
//   await system.settle();                                   // let events flow at this instant
//   await system.runUntil(async () => ..., { maxVirtualMs: 13 * 60_000 });
//   system.progress.of('cozy-system/my-ag');                 // stall, forces, recovery, verdict
//   await system.stop();

import type { KubeConfig } from '@kubernetes/client-node';
import { VirtualClock } from './virtual-clock.js';
import { WallClock } from './wall-clock.js';
import { createSourceWatcherSim, type SourceWatcherSim } from './source-watcher-sim/index.js';
import {
  startKubeProxy,
  type CallMatch,
  type KubeProxy,
  type ProxyCall,
} from '../support/kube-proxy.js';
import {
  createKnativeEmulation,
  type BrokerTuning,
  type KnativeEmulation,
  type KnativeManifests,
} from './knative/index.js';
import {
  FUNCTION_NAMES,
  startFunctions,
  countedApiWaits,
  type FunctionName,
  type FunctionReplica,
} from './functions.js';
import { proxyCatchUps } from './system/catch-up.js';
import { LogCapture } from './system/log-capture.js';
import { ACTION_STALLED_TYPE, ProgressLog, type ProgressEvent } from './system/progress.js';
import { RECOVERY_NAMESPACE, WorldWatch } from './system/world.js';
import type { ServiceAccountTokens } from '../setup/cluster-rbac.js';
import {
  defaultStormProfiles,
  StormProfile,
  STORM_DURATION_MS,
  type StormClientProfile,
} from '../support/storm.js';

export { FUNCTION_NAMES, type FunctionName, type FunctionReplica } from './functions.js';
export type { BrokerTuning } from './knative/index.js';
export type { LogRecord } from './system/log-capture.js';
export {
  ProgressLog,
  parseRfc3339,
  type AgProgress,
  type AgVersion,
  type ConditionSnapshot,
  type ForceRecord,
  type ProgressEvent,
  type ProgressKind,
} from './system/progress.js';

/** Client tags of the Knative adapters' API calls. */
export const APISERVERSOURCE_TAG = 'apiserversource';
export const PINGSOURCE_TAG = 'pingsource';
export const SOURCE_WATCHER_TAG = 'source-watcher';
/** Client tag of the harness's catch-up lists of the sources' watches (never the adapters'). */
export const CATCH_UP_TAG = 'catch-up';
const WRITE_VERBS = ['create', 'update', 'patch', 'delete', 'deletecollection'] as const;

export interface SystemOptions {
  /** The cluster to run against (the test API server), as the admin. */
  kubeConfig: KubeConfig;
  /**
   * A token per ServiceAccount of knative/ (test/setup/cluster-rbac.ts installIdentities): the
   * functions and the ApiServerSource call the API server with these, never as the admin.
   */
  serviceAccountTokens: ServiceAccountTokens;
  /** Replicas of each function (default 1). */
  replicas?: number;
  /** Function environment on top of the defaults (RECOVERY_MODE, RECOVERY_GRACE_PERIOD, ...). */
  env?: Readonly<Record<string, string>>;
  /** One function's own environment on top of `env` (a Service's `env:` in knative/). */
  envOf?: (name: FunctionName) => Readonly<Record<string, string>>;
  /**
   * Eventing's authentication-oidc on (docs/adr/0056): the Broker and the sources send real
   * tokens of Eventing-named identities (made by the admin, as Knative's controller); turn the
   * functions' check on with RECOVERY_AUTH=oidc in `env`.
   */
  oidc?: boolean;
  /** Function log level (default silent). Logs are kept in `system.logs`. */
  logLevel?: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Also hand every function log line (JSON) here, e.g. to print it. */
  logForward?: (line: string) => void;
  /** Keep only the log records with these messages in `system.logs` (default: every one). */
  logKeep?: readonly string[];
  /** Virtual start, epoch ms (default: the real now rounded down to a second). */
  startMs?: number;
  /**
   * Run on the real clock instead (test/harness/wall-clock.ts): timers fire by themselves and
   * advance() waits real time. For wall-clock latency measurements only (bench P1).
   */
  realClock?: boolean;
  /** Broker delivery tuning: duplicates, reordering, seed, replica choice. */
  broker?: BrokerTuning;
  /** The source-watcher simulator's build time and RNG seed. */
  sourceWatcher?: {
    buildTimeMs?: number;
    seed?: number;
    concurrency?: number;
    /** Generate and own ExternalArtifacts as source-watcher does (docs/adr/0039). */
    externalArtifacts?: boolean;
  };
  /** Seed of the PingSource adapter's jitter and pick-up lag (default 1). */
  pingSeed?: number;
  /** Called for every progress event as it is recorded. */
  onProgress?: (e: ProgressEvent) => void;
  /** Structured trace of the emulation and the simulator (constant message, fields). */
  trace?: (msg: string, fields: Record<string, unknown>) => void;
  /** Real ms with no activity that ends a settle (default 10). */
  quietMs?: number;
  /** Real ms a settle may take before it fails (default 60 000). */
  settleTimeoutMs?: number;
  /**
   * Run an install rendered into another namespace (docs/adr/0063): its Triggers, Broker and
   * PingSources route the emulation, the functions run in it (POD_NAMESPACE) and the
   * ApiServerSource's access is checked there. Its identities (and serviceAccountTokens) must be
   * the ServiceAccounts of that namespace. Default: knative/ in source-watcher-recovery.
   */
  install?: { namespace: string; manifests: KnativeManifests };
}

export interface StartStormOptions {
  /** Seed of the storm's choices (default 1). */
  seed?: number;
  /** Length of the window from now, virtual ms (default 8 minutes). */
  durationMs?: number;
  /** Per client tag (default: defaultStormProfiles(), the rates). */
  profiles?: Readonly<Record<string, Partial<StormClientProfile>>>;
}

export interface RunUntilOptions {
  /** Fail when the predicate still does not hold after this much virtual time. */
  maxVirtualMs: number;
  /** Virtual ms between predicate checks (default 5000). Timers fire at their exact times anyway. */
  stepMs?: number;
  /** Named in the error when the time runs out. */
  what?: string;
}

export interface System {
  /** The one clock of the functions, the simulator and the emulation. */
  readonly clock: VirtualClock;
  /** Every API call, tagged by client; fault injection. */
  readonly proxy: KubeProxy;
  readonly knative: KnativeEmulation;
  /** The source-watcher simulator and its knobs. */
  readonly sim: SourceWatcherSim;
  readonly functions: readonly FunctionReplica[];
  readonly progress: ProgressLog;
  /** The functions' log records (empty at the default level, silent). */
  readonly logs: LogCapture;
  /** Direct access to the cluster, bypassing the proxy (for assertions). */
  readonly kubeConfig: KubeConfig;
  /** Runs until nothing moves: Broker and sources idle, simulator settled, counters quiet. */
  settle(): Promise<void>;
  /** Settles run so far (by the clock, runUntil and the scenario): the harness's own work. */
  readonly settles: number;
  /** Moves virtual time forward, firing timers in order and settling after each. */
  advance(ms: number): Promise<void>;
  /**
   * Advances in steps until `predicate` holds (checked after a settle, before each step).
   * Resolves with the virtual time at which it held; rejects after maxVirtualMs. The predicate
   * only reads: after the first settle, the steps' settles wait only for the writes made behind
   * the proxy (system/catch-up.ts).
   */
  runUntil(predicate: () => boolean | Promise<boolean>, opts: RunUntilOptions): Promise<number>;
  /** Write calls (create, update, patch, delete) by the given clients, optionally narrowed. */
  writesBy(tags: string | readonly string[], match?: CallMatch): ProxyCall[];
  /**
   * Starts the first-install storm in the proxy, from the virtual now (docs/adr/0040): a delayed
   * call waits on the virtual clock, and a settle ends when only such calls are left.
   */
  startStorm(o?: StartStormOptions): StormProfile;
  /** Closes everything; leaves no virtual timer, socket or watch. Idempotent. */
  stop(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function createSystem(opts: SystemOptions): Promise<System> {
  const replicas = opts.replicas ?? 1;
  if (!Number.isInteger(replicas) || replicas < 1) {
    throw new RangeError(`createSystem: replicas must be a positive integer, got ${replicas}`);
  }
  const quietMs = opts.quietMs ?? 10;
  const settleTimeoutMs = opts.settleTimeoutMs ?? 60_000;
  const clock =
    opts.realClock === true
      ? new WallClock()
      : new VirtualClock({ start: opts.startMs ?? Math.floor(Date.now() / 1000) * 1000 });
  // The functions' API clients sit out a Retry-After on the system's clock, counted (settle).
  const apiWaits = countedApiWaits(clock);
  const progress = new ProgressLog(opts.onProgress);
  const logs = new LogCapture(opts.logForward, {
    now: () => clock.now(),
    ...(opts.logKeep !== undefined ? { keep: opts.logKeep } : {}),
  });
  const cleanups: (() => Promise<void>)[] = [];
  const cleanup = async (): Promise<void> => {
    for (const step of cleanups.splice(0).reverse()) {
      try {
        await step();
      } catch {
        // Keep closing the rest.
      }
    }
  };

  try {
    const proxy = await startKubeProxy(opts.kubeConfig, { tag: 'untagged', clock });
    cleanups.push(() => proxy.stop());

    const knative = createKnativeEmulation({
      clock,
      apiServerSourceKubeConfig: proxy.kubeConfig(APISERVERSOURCE_TAG, {
        token: opts.serviceAccountTokens.apiserversource,
      }),
      apiServerSourceAccessCheck: {
        controllerKubeConfig: opts.kubeConfig,
        serviceAccount: 'apiserversource',
        namespace: opts.install?.namespace ?? RECOVERY_NAMESPACE,
      },
      ...(opts.install !== undefined ? { install: opts.install } : {}),
      pingSourceKubeConfig: proxy.kubeConfig(PINGSOURCE_TAG),
      // The harness's catch-up lists: its own client tag, which no storm profiles (docs/adr/0060).
      catchUpKubeConfig: proxy.kubeConfig(CATCH_UP_TAG),
      ...(opts.broker !== undefined ? { brokerOptions: opts.broker } : {}),
      pingOptions: { seed: opts.pingSeed ?? 1 },
      ...(opts.trace !== undefined ? { log: opts.trace } : {}),
      ...(opts.oidc === true ? { oidc: { kubeConfig: opts.kubeConfig } } : {}),
    });
    await knative.startBroker();
    cleanups.push(() => knative.stop());

    const functions = await startFunctions({
      replicas,
      clock,
      apiClock: apiWaits,
      kubeConfigFor: (name) =>
        // dead-letter makes no API call and has no token (automountServiceAccountToken: false).
        proxy.kubeConfig(
          name,
          name === 'dead-letter' ? {} : { token: opts.serviceAccountTokens[name] },
        ),
      brokerUrl: knative.broker.ingressUrl,
      env: {
        ...(opts.install !== undefined ? { POD_NAMESPACE: opts.install.namespace } : {}),
        ...opts.env,
      },
      ...(opts.envOf !== undefined ? { envOf: opts.envOf } : {}),
      logLevel: opts.logLevel ?? 'silent',
      logDestination: logs,
    });
    // Closed after the Broker (registered earlier, so run later): no delivery is left in flight.
    cleanups.splice(cleanups.length - 1, 0, async () => {
      await Promise.allSettled(functions.map((f) => f.close()));
    });
    for (const name of FUNCTION_NAMES) {
      knative.broker.setSubscriber(
        name,
        functions.filter((f) => f.name === name).map((f) => f.url),
      );
    }

    const world = new WorldWatch(opts.kubeConfig, progress, () => clock.now());
    await world.start();
    cleanups.push(() => world.stop());

    const sim = createSourceWatcherSim({
      kubeConfig: proxy.kubeConfig(SOURCE_WATCHER_TAG),
      clock,
      ...(opts.sourceWatcher?.buildTimeMs !== undefined
        ? { buildTimeMs: opts.sourceWatcher.buildTimeMs }
        : {}),
      ...(opts.sourceWatcher?.seed !== undefined ? { seed: opts.sourceWatcher.seed } : {}),
      ...(opts.sourceWatcher?.concurrency !== undefined
        ? { concurrency: opts.sourceWatcher.concurrency }
        : {}),
      ...(opts.sourceWatcher?.externalArtifacts === true ? { externalArtifacts: true } : {}),
      log: (message, fields) => {
        if (message === 'conditions write lost' && typeof fields['key'] === 'string') {
          progress.onLostWrite(fields['key'], clock.now());
        }
        opts.trace?.(message, { component: 'source-watcher-sim', ...fields });
      },
    });
    await sim.start();
    cleanups.push(() => sim.stop());

    await knative.startSources();

    // ---- settling ------------------------------------------------------------------------------

    let proxyCursor = 0;
    let proxyActivity = 0;
    let ingestCursor = 0;
    const activity = (): number => {
      for (; proxyCursor < proxy.calls.length; proxyCursor++) {
        const tag = proxy.calls[proxyCursor]?.clientTag;
        // The catch-up lists are the settling itself, and the adapters' own lists and watch
        // connects change nothing in the world: neither is activity.
        if (tag !== APISERVERSOURCE_TAG && tag !== PINGSOURCE_TAG && tag !== CATCH_UP_TAG) {
          proxyActivity++;
        }
      }
      const s = sim.stats;
      return knative.activity() + world.events + s.reconciles + s.lostWrites + proxyActivity;
    };
    const consumeIngests = (): void => {
      const ingested = knative.broker.ingested;
      for (; ingestCursor < ingested.length; ingestCursor++) {
        const rec = ingested[ingestCursor];
        if (rec?.event.type === ACTION_STALLED_TYPE && typeof rec.event.subject === 'string') {
          progress.onGiveUp(rec.event.subject, rec.at);
        }
      }
    };

    // With the storm on, a call held on the virtual clock keeps its delivery or reconcile in
    // flight until the clock moves, which only happens after a settle, and so does a call whose
    // function sits out a Retry-After on it (apiWaits): a wait also ends once only held calls and
    // such waits are left (nothing upstream, no new call for two quiet periods).
    let holding = false;
    const onlyHeldLeft = async (stop: { done: boolean }): Promise<void> => {
      let last = -1;
      let quiet = 0;
      while (!stop.done) {
        await sleep(quietMs);
        const n = proxy.calls.length;
        quiet = n === last ? quiet + 1 : 0;
        last = n;
        const onClock = proxy.heldOnClock + apiWaits.pending;
        if (onClock > 0 && proxy.upstreamInFlight === 0 && quiet >= 2) return;
      }
    };
    const orHeld = async (work: Promise<unknown>): Promise<void> => {
      if (!holding) {
        await work;
        return;
      }
      const stop = { done: false };
      work.catch(() => undefined);
      try {
        await Promise.race([work, onlyHeldLeft(stop)]);
      } finally {
        stop.done = true;
      }
    };

    let stopped = false;
    let stage = '';
    const catchUps = proxyCatchUps(proxy);
    let settles = 0;
    const settle = async (step?: { afterTimer: boolean }): Promise<void> => {
      if (stopped) return;
      settles++;
      const deadline = Date.now() + settleTimeoutMs;
      const left = (): number => Math.max(1, deadline - Date.now());
      // The simulator has its own watch: wait until it saw every AG's current version.
      const simulatorSawEveryAg = () =>
        Promise.all(
          [...world.agResourceVersions().values()]
            .filter((rv) => rv !== '')
            .map((rv) => sim.observed(rv, left())),
        );
      // Fresh lists only where a scenario may have written directly (system/catch-up.ts).
      let catchUp = step?.afterTimer === true ? catchUps.incremental : catchUps.full;
      for (; ; catchUp = catchUps.incremental) {
        const before = activity();
        if (holding) {
          // knative.idle() loops (with lists) until nothing moves; racing it would leave such
          // loops behind. Here: the sources catch up once, then one passive wait for everything,
          // ended early when only held calls are left; this loop repeats the round.
          stage = 'sources catch up (storm)';
          await knative.apiServerSource.caughtUp(left(), catchUp);
          await knative.pings.caughtUp(left(), catchUp);
          await world.caughtUp(left(), catchUp);
          stage = 'deliveries, simulator and broker (storm)';
          await orHeld(
            (async () => {
              await Promise.all([knative.apiServerSource.idle(), knative.pings.idle()]);
              await knative.broker.idle();
              await simulatorSawEveryAg();
              await sim.settled();
              await knative.broker.idle();
            })(),
          );
        } else {
          stage = 'knative';
          await knative.idle({ timeoutMs: left(), catchUp });
          stage = 'world';
          await world.caughtUp(left(), catchUp);
          stage = 'simulator watch';
          await simulatorSawEveryAg();
          stage = 'simulator reconciles';
          await sim.settled();
          stage = 'broker';
          await knative.broker.idle();
        }
        stage = 'quiet';
        consumeIngests();
        await sleep(quietMs);
        if (activity() === before) return;
        if (Date.now() > deadline) {
          throw new Error(
            `system did not settle within ${settleTimeoutMs} ms (last wait: ${stage}; ` +
              `broker in flight ${knative.broker.inFlight}, calls held ${proxy.heldOnClock}, ` +
              `API waits ${apiWaits.pending}, ` +
              `upstream ${proxy.upstreamInFlight})`,
          );
        }
      }
    };
    clock.setSettle(settle);

    const system: System = {
      clock,
      proxy,
      knative,
      sim,
      functions,
      progress,
      logs,
      kubeConfig: opts.kubeConfig,
      settle,
      get settles() {
        return settles;
      },
      advance: (ms) => clock.advance(ms),
      async runUntil(predicate, o) {
        const betweenSteps = (): Promise<void> => settle({ afterTimer: true });
        const step = o.stepMs ?? 5000;
        if (!(o.maxVirtualMs >= 0) || !(step > 0)) {
          throw new RangeError('runUntil: maxVirtualMs must be >= 0 and stepMs > 0');
        }
        const end = clock.now() + o.maxVirtualMs;
        await settle();
        for (;;) {
          if (await predicate()) return clock.now();
          if (clock.now() >= end) {
            throw new Error(
              `runUntil: ${o.what ?? 'the condition'} did not hold within ${o.maxVirtualMs} virtual ms ` +
                `(virtual now ${new Date(clock.now()).toISOString()})`,
            );
          }
          await clock.advanceTo(Math.min(end, clock.now() + step), { settle: betweenSteps });
        }
      },
      writesBy(tags, match = {}) {
        const wanted = typeof tags === 'string' ? [tags] : tags;
        return proxy
          .callsMatching({ ...match, verb: [...WRITE_VERBS] })
          .filter((c) => wanted.includes(c.clientTag));
      },
      startStorm(o = {}) {
        const storm = new StormProfile({
          seed: o.seed ?? 1,
          startMs: clock.now(),
          durationMs: o.durationMs ?? STORM_DURATION_MS,
          profiles: o.profiles ?? defaultStormProfiles(),
        });
        proxy.setStorm(storm, { holdOn: clock });
        holding = true;
        return storm;
      },
      async stop() {
        if (stopped) return;
        stopped = true;
        clock.setSettle(undefined);
        proxy.setStorm(undefined);
        proxy.dropHeld();
        await cleanup();
        if (clock instanceof WallClock) clock.stop();
      },
    };
    return system;
  } catch (e) {
    await cleanup();
    throw e;
  }
}
