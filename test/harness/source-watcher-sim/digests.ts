// Simulated content: the sources digest (spec.sources + a per-AG "source revision" knob) and the
// inventory a build produces. Deterministic, so tests can predict them.

import { createHash } from 'node:crypto';
import { canonicalJson } from './json.js';
import type { SimAg, SimInventoryEntry } from './types.js';

function sha256(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

export function sourcesDigest(ag: SimAg, sourceRevision: string): string {
  const sources = Array.isArray(ag.spec?.sources) ? ag.spec.sources : [];
  return sha256(canonicalJson({ sources, revision: sourceRevision }));
}

function artifactName(artifact: unknown, index: number): string {
  if (artifact && typeof artifact === 'object') {
    const name = (artifact as { name?: unknown }).name;
    if (typeof name === 'string' && name !== '') return name;
  }
  return `artifact-${index}`;
}

/** One inventory entry per spec.artifacts item. */
export function buildInventory(ag: SimAg, digestOfSources: string): SimInventoryEntry[] {
  const artifacts = Array.isArray(ag.spec?.artifacts) ? ag.spec.artifacts : [];
  const { namespace } = ag.metadata;
  return artifacts.map((artifact, i) => {
    const name = artifactName(artifact, i);
    return {
      name,
      namespace,
      digest: sha256(canonicalJson({ namespace, name, artifact, sources: digestOfSources })),
      filename: `${name}.tar.gz`,
    };
  });
}

export function artifactCount(ag: SimAg): number {
  return Array.isArray(ag.spec?.artifacts) ? ag.spec.artifacts.length : 0;
}
