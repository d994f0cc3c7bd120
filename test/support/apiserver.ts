// Test helpers for the real test API server started by test/setup/apiserver-global-setup.ts:
// its kubeconfig, unique names, fixture builders for schema-valid ArtifactGenerators and
// PackageSources, and raw CustomObjectsApi calls to create, read, delete and write status.

import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { inject } from 'vitest';
import {
  AG_API_GROUP,
  AG_API_VERSION,
  AG_KIND,
  AG_PLURAL,
  PS_API_GROUP,
  PS_API_VERSION,
  PS_KIND,
  PS_PLURAL,
} from '../../shared/core/types.js';
import type {
  AgRef,
  ArtifactGenerator,
  ArtifactGeneratorStatus,
  PackageSource,
  PackageSourceStatus,
} from '../../shared/core/types.js';

export const AG_VERSION = 'v1beta1';
export const PS_VERSION = 'v1alpha1';
export const DEFAULT_AG_NAMESPACE = 'cozy-system';
export const PACKAGESOURCE_LABEL = 'cozystack.io/packagesource';

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

/** A DNS-1123 name unique to this call: `<prefix>-<10 random base-36 chars>`. */
export function uniqueName(prefix: string): string {
  const suffix = BigInt(`0x${randomBytes(8).toString('hex')}`)
    .toString(36)
    .slice(0, 10);
  return `${prefix.toLowerCase().slice(0, 50)}-${suffix}`;
}

// ---------------------------------------------------------------- fixture builders

export interface PackageSourceOwner {
  name: string;
  uid: string;
}

export interface ArtifactGeneratorFixture {
  name?: string;
  namespace?: string;
  /** Adds the controller ownerReference and the cozystack.io/packagesource label. */
  owner?: PackageSourceOwner;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  /** Name of the single source (an OCIRepository in the same namespace). */
  sourceName?: string;
}

/** An AG with one source and one artifact, valid against the CRD fixture. */
export function makeArtifactGenerator(fixture: ArtifactGeneratorFixture = {}): ArtifactGenerator {
  const name = fixture.name ?? uniqueName('ag');
  const labels: Record<string, string> = { ...fixture.labels };
  const metadata: NonNullable<ArtifactGenerator['metadata']> = {
    name,
    namespace: fixture.namespace ?? DEFAULT_AG_NAMESPACE,
  };
  if (fixture.owner !== undefined) {
    labels[PACKAGESOURCE_LABEL] = fixture.owner.name;
    metadata.ownerReferences = [
      {
        apiVersion: PS_API_VERSION,
        kind: PS_KIND,
        name: fixture.owner.name,
        uid: fixture.owner.uid,
        controller: true,
      },
    ];
  }
  if (Object.keys(labels).length > 0) metadata.labels = labels;
  if (fixture.annotations !== undefined) metadata.annotations = { ...fixture.annotations };
  return {
    apiVersion: AG_API_VERSION,
    kind: AG_KIND,
    metadata,
    spec: {
      sources: [{ alias: 'src', kind: 'OCIRepository', name: fixture.sourceName ?? name }],
      artifacts: [{ name, copy: [{ from: '@src/**', to: '@artifact/' }] }],
    },
  };
}

export interface PackageSourceFixture {
  name?: string;
  spec?: Record<string, unknown>;
}

export function makePackageSource(fixture: PackageSourceFixture = {}): PackageSource {
  return {
    apiVersion: PS_API_VERSION,
    kind: PS_KIND,
    metadata: { name: fixture.name ?? uniqueName('pks') },
    spec: fixture.spec ?? {
      sourceRef: { kind: 'OCIRepository', name: 'cozystack-packages', namespace: 'cozy-public' },
    },
  };
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
