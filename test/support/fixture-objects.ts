// The ArtifactGenerator and PackageSource objects of the tests, schema-valid against the CRD
// fixtures: the integration suites create them on the real API server (./apiserver.ts re-exports
// them), the unit tests build their in-memory objects on them. Pure: no vitest, no client-node, no
// node:* imports. Their conditions: ./conditions.ts.

import {
  AG_API_VERSION,
  AG_KIND,
  PS_API_VERSION,
  PS_KIND,
} from '../../shared/core/objects/types.js';
import type { ArtifactGenerator, PackageSource } from '../../shared/core/objects/types.js';

export const DEFAULT_AG_NAMESPACE = 'cozy-system';
export const PACKAGESOURCE_LABEL = 'cozystack.io/packagesource';

/** A DNS-1123 name unique to this call: `<prefix>-<10 random base-36 chars>`. */
export function uniqueName(prefix: string): string {
  const hex = Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) =>
    b.toString(16).padStart(2, '0'),
  ).join('');
  const suffix = BigInt(`0x${hex}`).toString(36).slice(0, 10);
  return `${prefix.toLowerCase().slice(0, 50)}-${suffix}`;
}

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
