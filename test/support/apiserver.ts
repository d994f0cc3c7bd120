// Test helpers for the real test API server started by test/setup/apiserver-global-setup.ts:
// its kubeconfig, the fixture builders for schema-valid ArtifactGenerators and PackageSources
// (kept in the pure ./fixture-objects.ts, re-exported here), and raw CustomObjectsApi calls to
// create, read, delete and write status.

import * as k8s from '@kubernetes/client-node';
import { inject } from 'vitest';
import {
  AG_API_GROUP,
  AG_PLURAL,
  PS_API_GROUP,
  PS_PLURAL,
} from '../../shared/core/objects/types.js';
import type {
  AgRef,
  ArtifactGenerator,
  ArtifactGeneratorStatus,
  PackageSource,
  PackageSourceStatus,
} from '../../shared/core/objects/types.js';
import { makeArtifactGenerator, makePackageSource, uniqueName } from './fixture-objects.js';

export {
  DEFAULT_AG_NAMESPACE,
  PACKAGESOURCE_LABEL,
  makeArtifactGenerator,
  makePackageSource,
  uniqueName,
  type ArtifactGeneratorFixture,
  type PackageSourceFixture,
  type PackageSourceOwner,
} from './fixture-objects.js';

export const AG_VERSION = 'v1beta1';
export const PS_VERSION = 'v1alpha1';

/** Request options that send a JSON merge patch (client-node 1.4 defaults to JSON patch). */
export const MERGE_PATCH = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

export function testKubeconfigPath(): string {
  return inject('kubeconfigPath');
}

export function testKubeConfig(path = testKubeconfigPath()): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

export function customObjects(kc: k8s.KubeConfig = testKubeConfig()): k8s.CustomObjectsApi {
  return kc.makeApiClient(k8s.CustomObjectsApi);
}

// ---------------------------------------------------------------- raw API calls

const agApi = { group: AG_API_GROUP, version: AG_VERSION, plural: AG_PLURAL } as const;
const psApi = { group: PS_API_GROUP, version: PS_VERSION, plural: PS_PLURAL } as const;

export function agRefOf(ag: ArtifactGenerator): AgRef {
  return { namespace: ag.metadata?.namespace ?? '', name: ag.metadata?.name ?? '' };
}

const ensuredNamespaces = new Set<string>();

/**
 * Creates the namespace unless this process already did (or it exists): the real kube-apiserver
 * refuses objects in a namespace that does not exist (NamespaceLifecycle admission).
 */
export async function ensureNamespace(name: string, kc?: k8s.KubeConfig): Promise<void> {
  if (ensuredNamespaces.has(name)) return;
  try {
    await (kc ?? testKubeConfig())
      .makeApiClient(k8s.CoreV1Api)
      .createNamespace({ body: { metadata: { name } } });
  } catch (err) {
    if (apiStatusOf(err) !== 409) throw err;
  }
  ensuredNamespaces.add(name);
}

/** Creates the AG (and its namespace, when missing). */
export async function createArtifactGenerator(
  ag: ArtifactGenerator,
  kc?: k8s.KubeConfig,
): Promise<ArtifactGenerator> {
  await ensureNamespace(agRefOf(ag).namespace, kc);
  return (await customObjects(kc).createNamespacedCustomObject({
    ...agApi,
    namespace: agRefOf(ag).namespace,
    body: ag,
  })) as ArtifactGenerator;
}

export async function getArtifactGenerator(
  ref: AgRef,
  kc?: k8s.KubeConfig,
): Promise<ArtifactGenerator> {
  return (await customObjects(kc).getNamespacedCustomObject({
    ...agApi,
    ...ref,
  })) as ArtifactGenerator;
}

/** Merge-patches the AG's status through the status subresource. */
export async function writeArtifactGeneratorStatus(
  ref: AgRef,
  status: ArtifactGeneratorStatus,
  kc?: k8s.KubeConfig,
): Promise<ArtifactGenerator> {
  return (await customObjects(kc).patchNamespacedCustomObjectStatus(
    { ...agApi, ...ref, body: { status } },
    MERGE_PATCH,
  )) as ArtifactGenerator;
}

/** Deletes the AG; already gone is fine. */
export async function deleteArtifactGenerator(ref: AgRef, kc?: k8s.KubeConfig): Promise<void> {
  await ignoreNotFound(customObjects(kc).deleteNamespacedCustomObject({ ...agApi, ...ref }));
}

export async function createPackageSource(
  ps: PackageSource,
  kc?: k8s.KubeConfig,
): Promise<PackageSource> {
  return (await customObjects(kc).createClusterCustomObject({
    ...psApi,
    body: ps,
  })) as PackageSource;
}

export async function getPackageSource(name: string, kc?: k8s.KubeConfig): Promise<PackageSource> {
  return (await customObjects(kc).getClusterCustomObject({ ...psApi, name })) as PackageSource;
}

/** The resourceVersion of the object in the API server's watch cache: the first item of `list`. */
function cachedRv(list: unknown): string | undefined {
  return (list as { items: { metadata?: { resourceVersion?: string } }[] }).items[0]?.metadata
    ?.resourceVersion;
}

/** A list of one object by name at resourceVersion 0 (served from the watch cache). */
const fromWatchCache = (name: string) => ({
  fieldSelector: `metadata.name=${name}`,
  resourceVersion: '0',
});

/** The AG's resourceVersion in the API server's watch cache. */
export async function cachedArtifactGeneratorRv(
  ref: AgRef,
  kc?: k8s.KubeConfig,
): Promise<string | undefined> {
  return cachedRv(
    await customObjects(kc).listNamespacedCustomObject({
      ...agApi,
      namespace: ref.namespace,
      ...fromWatchCache(ref.name),
    }),
  );
}

/** The PackageSource's resourceVersion in the API server's watch cache. */
export async function cachedPackageSourceRv(
  name: string,
  kc?: k8s.KubeConfig,
): Promise<string | undefined> {
  return cachedRv(
    await customObjects(kc).listClusterCustomObject({ ...psApi, ...fromWatchCache(name) }),
  );
}

/** Merge-patches the PackageSource's status through the status subresource. */
export async function writePackageSourceStatus(
  name: string,
  status: PackageSourceStatus,
  kc?: k8s.KubeConfig,
): Promise<PackageSource> {
  return (await customObjects(kc).patchClusterCustomObjectStatus(
    { ...psApi, name, body: { status } },
    MERGE_PATCH,
  )) as PackageSource;
}

/** Deletes the PackageSource; already gone is fine. */
export async function deletePackageSource(name: string, kc?: k8s.KubeConfig): Promise<void> {
  await ignoreNotFound(customObjects(kc).deleteClusterCustomObject({ ...psApi, name }));
}

/** Creates a PackageSource and an AG it owns (controller ownerReference plus label). */
export async function createOwnedPair(
  fixture: { name?: string; namespace?: string } = {},
  kc?: k8s.KubeConfig,
): Promise<{ packageSource: PackageSource; artifactGenerator: ArtifactGenerator }> {
  const name = fixture.name ?? uniqueName('pair');
  const packageSource = await createPackageSource(makePackageSource({ name }), kc);
  const owner = { name, uid: packageSource.metadata?.uid ?? '' };
  const ag = makeArtifactGenerator({
    name,
    owner,
    ...(fixture.namespace === undefined ? {} : { namespace: fixture.namespace }),
  });
  return { packageSource, artifactGenerator: await createArtifactGenerator(ag, kc) };
}

/** The HTTP status of a failed client-node call, or undefined when it is not an API error. */
export function apiStatusOf(err: unknown): number | undefined {
  return err instanceof k8s.ApiException ? err.code : undefined;
}

async function ignoreNotFound(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (err) {
    if (apiStatusOf(err) !== 404) throw err;
  }
}
