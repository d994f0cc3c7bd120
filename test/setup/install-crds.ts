// Installs the CRDs the tests serve and waits until each one is Established and its custom
// resources can actually be listed (storage initialised):
//   - upstream CRDs, put into test/crds/.cache/crds/ from the Go module cache by
//     test/crds/generate.sh (ArtifactGenerator generated with controller-gen from
//     source-watcher/api/v2, source-controller's config/crd/bases, the Knative Service), and
//     by test/crds/flux-toolkit/generate.sh into test/crds/.cache/flux-toolkit/ (Flux's
//     Kustomization and HelmRelease, generated from kustomize-controller's and helm-controller's
//     API modules);
//   - the verbatim upstream CRDs that no served Go module carries, which the repository carries in
//     test/third_party/crds/ (Cozystack's PackageSource; Knative Eventing v1.20's PingSource,
//     Broker, Trigger, ApiServerSource, SinkBinding and EventPolicy; provenance and license in
//     test/third_party/README.md), each checked against its SHA256SUMS line first.
//     The one change made to them: a `Webhook` conversion strategy becomes `None`, because the test
//     cluster has no Knative webhook to call (PingSource serves v1 and v1beta2; with `None` the
//     API server only rewrites apiVersion, which is all a test that reads v1 needs).

import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { CARRIED_CRD_DIR, SUMS_FILE, verifiedFiles } from '../support/carried-files.js';
import { REPO_ROOT } from './apiserver-process.js';

export const UPSTREAM_CRD_DIR = join(REPO_ROOT, 'test', 'crds', '.cache', 'crds');
export const UPSTREAM_CRD_SCRIPT = join(REPO_ROOT, 'test', 'crds', 'generate.sh');

/** Which source-watcher's ArtifactGenerator schema the test cluster serves (docs/adr/0066). */
export const AG_SCHEMA_ENV = 'SWR_AG_SCHEMA';
export type AgSchema = 'v2.1' | 'v2.3';
export const AG_V23_CRD_DIR = join(REPO_ROOT, 'test', 'crds', '.cache', 'ag-v2.3');
export const AG_V23_CRD_SCRIPT = join(REPO_ROOT, 'test', 'crds', 'ag-v2.3', 'generate.sh');
/** Flux's Kustomization and HelmRelease CRDs (docs/install.md's Flux examples are checked on them). */
export const FLUX_TOOLKIT_CRD_DIR = join(REPO_ROOT, 'test', 'crds', '.cache', 'flux-toolkit');
export const FLUX_TOOLKIT_CRD_SCRIPT = join(
  REPO_ROOT,
  'test',
  'crds',
  'flux-toolkit',
  'generate.sh',
);

/** SWR_AG_SCHEMA: unset or `v2.1` (the default, source-watcher v2.1.0), or `v2.3` (v2.3.1). */
export function agSchema(
  env: Readonly<Record<string, string | undefined>> = process.env,
): AgSchema {
  const v = env[AG_SCHEMA_ENV];
  if (v === undefined || v === '' || v === 'v2.1') return 'v2.1';
  if (v === 'v2.3') return 'v2.3';
  throw new Error(`${AG_SCHEMA_ENV}=${JSON.stringify(v)}: expected v2.1 or v2.3`);
}

/**
 * Runs test/crds/generate.sh and test/crds/flux-toolkit/generate.sh, and
 * test/crds/ag-v2.3/generate.sh when SWR_AG_SCHEMA=v2.3 (each a no-op when its output is up to
 * date).
 */
export async function prepareUpstreamCrds(): Promise<void> {
  await runScript(UPSTREAM_CRD_SCRIPT);
  await runScript(FLUX_TOOLKIT_CRD_SCRIPT);
  if (agSchema() === 'v2.3') await runScript(AG_V23_CRD_SCRIPT);
}

async function runScript(script: string): Promise<void> {
  const child = spawn('bash', [script], { stdio: ['ignore', 'inherit', 'inherit'] });
  const code = await new Promise<number | null>((done, fail) => {
    child.once('error', fail);
    child.once('exit', (exitCode) => done(exitCode));
  });
  if (code !== 0) {
    throw new Error(`upstream CRDs: bash ${script} exited ${code}`);
  }
}

/** `upstream` with the ArtifactGenerator CRD of SWR_AG_SCHEMA's source-watcher. */
async function withChosenAgSchema(
  upstream: k8s.V1CustomResourceDefinition[],
): Promise<k8s.V1CustomResourceDefinition[]> {
  if (agSchema() === 'v2.1') return upstream;
  const v23 = (await loadCrdFiles(AG_V23_CRD_DIR)).filter((c) => c.metadata?.name === AG_CRD_NAME);
  if (v23.length !== 1) {
    throw new Error(
      `no v2.3 ArtifactGenerator CRD in ${AG_V23_CRD_DIR}: run bash ${AG_V23_CRD_SCRIPT}`,
    );
  }
  return [...upstream.filter((c) => c.metadata?.name !== AG_CRD_NAME), ...v23];
}

/** Generated upstream CRDs and the carried verbatim ones, every CRD once (a name in both fails). */
export async function loadAllCrds(): Promise<k8s.V1CustomResourceDefinition[]> {
  const generated = await loadCrdFiles(UPSTREAM_CRD_DIR);
  if (generated.length === 0) {
    throw new Error(`no upstream CRDs in ${UPSTREAM_CRD_DIR}: run bash ${UPSTREAM_CRD_SCRIPT}`);
  }
  const fluxToolkit = await loadCrdFiles(FLUX_TOOLKIT_CRD_DIR);
  if (fluxToolkit.length !== 2) {
    throw new Error(
      `expected the Kustomization and HelmRelease CRDs in ${FLUX_TOOLKIT_CRD_DIR}: run bash ${FLUX_TOOLKIT_CRD_SCRIPT}`,
    );
  }
  const upstream = [...(await withChosenAgSchema(generated)), ...fluxToolkit];
  const carried = loadCarriedCrds();
  const names = new Set(upstream.map((c) => c.metadata?.name));
  const twice = carried.filter((c) => names.has(c.metadata?.name)).map((c) => c.metadata?.name);
  if (twice.length > 0) {
    throw new Error(`CRDs both generated and in ${CARRIED_CRD_DIR}: ${twice.join(', ')}`);
  }
  // The optional spec fields of newer source-watchers the heal reads (pathPattern,
  // serviceAccountName; docs/adr/0054), added before install rather than by a test mid-run.
  for (const crd of upstream) withNewerAgFields(crd);
  return [...upstream, ...carried];
}

/**
 * Every CRD of the carried upstream files (test/third_party/crds/), each checked against its
 * SHA256SUMS line (support/carried-files.ts), with a `Webhook` conversion turned into `None` (no
 * Knative webhook in the test cluster). A missing, changed or unlisted file, or a list with no
 * CRD, is an error naming the file: the tests must not run on other schemas than the recorded ones.
 */
export function loadCarriedCrds(dir = CARRIED_CRD_DIR): k8s.V1CustomResourceDefinition[] {
  const crds: k8s.V1CustomResourceDefinition[] = [];
  for (const file of verifiedFiles(dir, (name) => name.endsWith('.yaml'))) {
    for (const doc of parseAllDocuments(file.bytes.toString('utf8'))) {
      const value = doc.toJS() as k8s.V1CustomResourceDefinition | null;
      if (value?.kind !== 'CustomResourceDefinition') continue;
      if (value.spec.conversion?.strategy === 'Webhook')
        value.spec.conversion = { strategy: 'None' };
      crds.push(value);
    }
  }
  if (crds.length === 0) throw new Error(`no CRD listed in ${join(dir, SUMS_FILE)}`);
  return crds;
}

export const AG_CRD_NAME = 'artifactgenerators.source.extensions.fluxcd.io';
/** Optional spec fields of newer source-watchers (2.2: pathPattern, 2.3: serviceAccountName). */
export const NEWER_AG_FIELDS: Record<string, object> = {
  pathPattern: { type: 'string', maxLength: 1024 },
  serviceAccountName: { type: 'string', maxLength: 63 },
};

/**
 * The same fields added to the ArtifactGenerator CRD in memory before the test cluster installs it
 * (loadAllCrds), so that no test file has to update a served CRD while others
 * watch AGs; support/newer-ag-crd.ts's ensureNewerAgFields then only probes.
 */
export function withNewerAgFields(crd: k8s.V1CustomResourceDefinition): void {
  if (crd.metadata?.name !== AG_CRD_NAME) return;
  for (const version of crd.spec.versions) {
    const spec = version.schema?.openAPIV3Schema?.properties?.['spec'];
    if (spec === undefined) continue;
    spec.properties ??= {};
    for (const [field, value] of Object.entries(NEWER_AG_FIELDS)) {
      spec.properties[field] ??= structuredClone(value) as k8s.V1JSONSchemaProps;
    }
  }
}

const READY_TIMEOUT_MS = 60_000;
const POLL_MS = 100;

export async function loadCrdFiles(dir: string): Promise<k8s.V1CustomResourceDefinition[]> {
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
