// Installs the CRD fixtures (test/fixtures/crds/*.yaml) and waits until each one is
// Established and its custom resources can actually be listed (storage initialised).

import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { parse } from 'yaml';
import { REPO_ROOT } from './apiserver-process.js';

export const CRD_FIXTURE_DIR = join(REPO_ROOT, 'test', 'fixtures', 'crds');

const READY_TIMEOUT_MS = 60_000;
const POLL_MS = 100;

export async function loadCrdFixtures(
  dir = CRD_FIXTURE_DIR,
): Promise<k8s.V1CustomResourceDefinition[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
  return Promise.all(
    files.map(
      async (f) => parse(await readFile(join(dir, f), 'utf8')) as k8s.V1CustomResourceDefinition,
    ),
  );
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
