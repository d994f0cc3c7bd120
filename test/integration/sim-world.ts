// The world of the source-watcher-sim* suites: one simulator on a virtual clock per test, in a
// namespace of its own on the real test API server; the AGs they create (one GitRepository
// source, one copy per artifact) and the clean-up that drops the simulator's finalizer first.

import { CustomObjectsApi } from '@kubernetes/client-node';
import { AG_RESOURCE as AG } from '../harness/knative/index.js';
import { VirtualClock } from '../harness/virtual-clock.js';
import {
  createSourceWatcherSim,
  type SimAg,
  type SimRequest,
  type SourceWatcherSim,
  type SourceWatcherSimOptions,
} from '../harness/source-watcher-sim/index.js';
import { ensureNamespace, MERGE_PATCH, testKubeConfig, uniqueName } from '../support/apiserver.js';

export interface SimWorld {
  namespace: string;
  clock: VirtualClock;
  sim: SourceWatcherSim;
  /** Every request the simulator reported (its onRequest hook), in the order answered. */
  requests: SimRequest[];
}

/** Starts a simulator watching a new namespace (named after `prefix`), settled by the clock. */
export async function startSimWorld(
  prefix: string,
  options: Omit<SourceWatcherSimOptions, 'kubeConfig' | 'clock' | 'namespace'>,
): Promise<SimWorld> {
  const world = { namespace: uniqueName(prefix), clock: new VirtualClock() };
  // kube-apiserver creates nothing in a namespace that does not exist.
  await ensureNamespace(world.namespace);
  const requests: SimRequest[] = [];
  const sim = createSourceWatcherSim({
    kubeConfig: testKubeConfig(),
    ...world,
    ...options,
    onRequest: (r) => {
      requests.push(r);
      options.onRequest?.(r);
    },
  });
  world.clock.setSettle(() => sim.settled());
  await sim.start();
  return { ...world, sim, requests };
}

/** A spec's artifacts: one per name, each a copy of the source's files. */
export const simArtifacts = (names: string[]) =>
  names.map((name) => ({ name, copy: [{ from: '@src/**', to: '@artifact/' }] }));

/** Creates the AG `name` with one artifact per entry of `artifacts` (the simulator not awaited). */
export async function createSimAg(
  namespace: string,
  name: string,
  artifacts: string[],
): Promise<SimAg> {
  const raw = testKubeConfig().makeApiClient(CustomObjectsApi);
  const body = {
    apiVersion: `${AG.group}/${AG.version}`,
    kind: 'ArtifactGenerator',
    metadata: { name, namespace },
    spec: {
      sources: [{ alias: 'src', kind: 'GitRepository', name: 'repo' }],
      artifacts: simArtifacts(artifacts),
    },
  };
  return (await raw.createNamespacedCustomObject({ ...AG, namespace, body })) as SimAg;
}

/** Deletes every AG in `namespace`, dropping the finalizer the simulator put on it first. */
export async function deleteSimAgs(namespace: string): Promise<void> {
  const raw = testKubeConfig().makeApiClient(CustomObjectsApi);
  const list = (await raw.listNamespacedCustomObject({ ...AG, namespace })) as { items: SimAg[] };
  for (const ag of list.items) {
    const ref = { namespace, name: ag.metadata.name };
    const body = { metadata: { finalizers: null } };
    await raw.patchNamespacedCustomObject({ ...AG, ...ref, body }, MERGE_PATCH);
    await raw.deleteNamespacedCustomObject({ ...AG, ...ref });
  }
}
