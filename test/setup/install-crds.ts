// Installs the CRDs the tests serve and waits until each one is Established and its custom
// resources can actually be listed (storage initialised):
//   - upstream CRDs, put into test/crds/.cache/crds/ from the Go module cache by
//     test/crds/generate.sh (ArtifactGenerator generated with controller-gen from
//     source-watcher/api/v2, source-controller's config/crd/bases, the Knative Service);
//   - our fixtures (test/fixtures/crds/*.yaml) for what no served module ships: Cozystack's
//     PackageSource and Knative Eventing's PingSource, Broker, Trigger, ApiServerSource and
//     SinkBinding.

import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from './apiserver-process.js';

export const CRD_FIXTURE_DIR = join(REPO_ROOT, 'test', 'fixtures', 'crds');
export const UPSTREAM_CRD_DIR = join(REPO_ROOT, 'test', 'crds', '.cache', 'crds');
export const UPSTREAM_CRD_SCRIPT = join(REPO_ROOT, 'test', 'crds', 'generate.sh');

/** Runs test/crds/generate.sh (a no-op when its output is up to date). */
export async function prepareUpstreamCrds(): Promise<void> {
  const child = spawn('bash', [UPSTREAM_CRD_SCRIPT], { stdio: ['ignore', 'inherit', 'inherit'] });
  const code = await new Promise<number | null>((done, fail) => {
    child.once('error', fail);
    child.once('exit', (exitCode) => done(exitCode));
  });
  if (code !== 0) {
    throw new Error(`upstream CRDs: bash ${UPSTREAM_CRD_SCRIPT} exited ${code}`);
  }
}

/** Upstream CRDs and our fixtures, every CRD once (a name in both is an error). */
export async function loadAllCrds(): Promise<k8s.V1CustomResourceDefinition[]> {
  const upstream = await loadCrdFixtures(UPSTREAM_CRD_DIR);
  if (upstream.length === 0) {
    throw new Error(`no upstream CRDs in ${UPSTREAM_CRD_DIR}: run bash ${UPSTREAM_CRD_SCRIPT}`);
  }
  const ours = await loadCrdFixtures(CRD_FIXTURE_DIR);
  const names = new Set(upstream.map((c) => c.metadata?.name));
  const twice = ours.filter((c) => names.has(c.metadata?.name)).map((c) => c.metadata?.name);
  if (twice.length > 0) throw new Error(`CRDs both upstream and in fixtures: ${twice.join(', ')}`);
  return [...upstream, ...ours];
}

const READY_TIMEOUT_MS = 60_000;
const POLL_MS = 100;

export async function loadCrdFixtures(
  dir = CRD_FIXTURE_DIR,
): Promise<k8s.V1CustomResourceDefinition[]> {
  let files: string[];
  try {
    files = (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  const crds: k8s.V1CustomResourceDefinition[] = [];
  for (const f of files) {
    for (const doc of parseAllDocuments(await readFile(join(dir, f), 'utf8'))) {
      const value = doc.toJS() as k8s.V1CustomResourceDefinition | null;
      if (value?.kind === 'CustomResourceDefinition') crds.push(value);
    }
  }
  return crds;
}

export async function installCrds(
  kc: k8s.KubeConfig,
  crds: k8s.V1CustomResourceDefinition[],
): Promise<void> {
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  // Created untyped: the typed serializer of client-node drops schema keys it does not model
  // (x-kubernetes-preserve-unknown-fields), which would prune spec.sink and friends.
  const raw = kc.makeApiClient(k8s.CustomObjectsApi);
  for (const body of crds) {
    await raw.createClusterCustomObject({
      group: 'apiextensions.k8s.io',
      version: 'v1',
      plural: 'customresourcedefinitions',
      body,
    });
  }
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (const crd of crds) {
    await waitUntil(deadline, `CRD ${crd.metadata?.name} established`, () =>
      isEstablished(ext, crd),
    );
    await waitUntil(deadline, `CRD ${crd.metadata?.name} served`, () => isServed(kc, crd));
  }
}

async function isEstablished(
  ext: k8s.ApiextensionsV1Api,
  crd: k8s.V1CustomResourceDefinition,
): Promise<boolean> {
  const current = await ext.readCustomResourceDefinition({ name: crd.metadata?.name ?? '' });
  return (current.status?.conditions ?? []).some(
    (c) => c.type === 'Established' && c.status === 'True',
  );
}

async function isServed(kc: k8s.KubeConfig, crd: k8s.V1CustomResourceDefinition): Promise<boolean> {
  const version = crd.spec.versions.find((v) => v.served)?.name ?? '';
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  try {
    await api.listClusterCustomObject({
      group: crd.spec.group,
      version,
      plural: crd.spec.names.plural,
      limit: 1,
    });
    return true;
  } catch (err) {
    // 429 "storage is (re)initializing" and 404 (not yet in discovery) mean: not yet.
    if (err instanceof k8s.ApiException && (err.code === 429 || err.code === 404)) return false;
    throw err;
  }
}

async function waitUntil(
  deadline: number,
  what: string,
  probe: () => Promise<boolean>,
): Promise<void> {
  for (;;) {
    if (await probe()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
