// The rows' way onto the bench's test API server: its admin KubeConfig and the fleet writer, the
// end-to-end system (test/harness/system.ts) on it, with the world cleaned after each run for the
// rows that follow (they count writes), and the functions in this process as deployed.

import { KubeConfig } from '@kubernetes/client-node';
import type { KubePort } from '../../shared/kube/port.js';
import type { Clock } from '../../shared/runtime/clock.js';
import {
  closeAll,
  functionKubeClient,
  startAsDeployed,
  type FunctionName,
  type RunningFunction,
} from '../harness/functions.js';
import { createSystem, type System, type SystemOptions } from '../harness/system.js';
import { deleteAlarm } from '../harness/system/world.js';
import { startEventSink, type EventSink } from '../support/http-events.js';
import type { KubeProxy } from '../support/kube-proxy.js';
import { createRawKube, type RawKube } from '../support/raw-kube.js';
import type { BenchApiServer, BenchContext } from './types.js';

export interface BenchAdmin {
  /** A system:masters client of the server. */
  readonly kc: KubeConfig;
  readonly raw: RawKube;
}

/** The shared test API server (started on first use) and its admin. */
export async function benchCluster(
  ctx: BenchContext,
): Promise<BenchAdmin & { server: BenchApiServer }> {
  const server = await ctx.apiServer();
  const kc = new KubeConfig();
  kc.loadFromFile(server.kubeconfigPath);
  return { server, kc, raw: createRawKube(kc) };
}

/**
 * The namespaces the benches make PackageSource-owned AGs in (each AG named like its
 * PackageSource and carrying its uid): the functions verify an owner only there (docs/adr/0053),
 * as a Cozystack install verifies cozy-system's. cozy-system is the storm fleet's (P9,
 * test/harness/storm-fleet.ts): without it every fleet owner was refused (PackageSourceOwnerRefused)
 * and P9 gave no verdicts.
 */
export const BENCH_AG_NAMESPACES = [
  'cozy-system',
  'bench-p1',
  'bench-p1-real',
  'bench-p2',
  'bench-p3',
  'bench-p5',
  'bench-p5-attempts',
  'bench-p5-force',
  'bench-p5-idle',
] as const;
export const BENCH_OWNER_ENV: Readonly<Record<string, string>> = {
  RECOVERY_PACKAGESOURCE_AG_NAMESPACES: BENCH_AG_NAMESPACES.join(','),
};

export type SystemRunOptions = Omit<
  SystemOptions,
  'kubeConfig' | 'serviceAccountTokens' | 'pingSeed'
>;

/**
 * Runs `run` on a fresh system on the bench's API server, `seed` the seed of both the PingSource
 * jitter and the simulator, then stops it and deletes the AGs in `namespace`, every PackageSource
 * and the alarm. `tolerant`: a failing clean-up is ignored.
 */
export async function withBenchSystem<T>(
  ctx: BenchContext,
  namespace: string,
  seed: number,
  options: SystemRunOptions,
  run: (system: System, admin: BenchAdmin) => Promise<T>,
  cleanup: 'strict' | 'tolerant' = 'strict',
): Promise<T> {
  const { server, kc, raw } = await benchCluster(ctx);
  const system = await createSystem({
    kubeConfig: kc,
    serviceAccountTokens: server.serviceAccountTokens,
    ...options,
    env: { ...BENCH_OWNER_ENV, ...options.env },
    pingSeed: seed,
    sourceWatcher: { ...options.sourceWatcher, seed },
  });
  const step = async (task: () => Promise<unknown>): Promise<void> => {
    if (cleanup === 'strict') await task();
    else await task().catch(() => undefined);
  };
  try {
    return await run(system, { kc, raw });
  } finally {
    await system.stop();
    await step(() => raw.deleteAllAgs(namespace));
    await step(() => raw.deleteAllPackageSources());
    await step(() => deleteAlarm(kc));
  }
}

/** Each function's client through `proxy`, tagged with its name. */
export function viaProxy(proxy: KubeProxy): (fn: FunctionName, clock: Clock) => KubePort {
  return (fn, clock) => functionKubeClient(fn, proxy.kubeConfig(fn), clock);
}

/**
 * Runs `run` with the functions started in this process as deployed (the functions room's
 * startAsDeployed), each on the client `kubeOf` gives it and on `clock`, detect emitting to a
 * fresh Broker stand-in; closes the functions and the stand-in after.
 */
export async function withDeployedFunctions<T>(
  kubeOf: (fn: FunctionName, clock: Clock) => KubePort,
  run: (fns: readonly RunningFunction[], sink: EventSink) => Promise<T>,
  clock?: Clock,
): Promise<T> {
  const sink = await startEventSink();
  try {
    const fns = await startAsDeployed(kubeOf, sink.url, clock, BENCH_OWNER_ENV);
    try {
      return await run(fns, sink);
    } finally {
      await closeAll(fns);
    }
  } finally {
    await sink.close();
  }
}
