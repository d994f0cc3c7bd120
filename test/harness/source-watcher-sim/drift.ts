// source-watcher's drift check, first match wins (test/README.md, "The source-watcher simulator"; drift check). Ready Unknown or missing is
// NOT drift: that is why an AG whose Ready write was lost never heals by itself.

import { READY } from './constants.js';
import { findCondition } from './conditions.js';
import { artifactCount } from './digests.js';
import type { SimAg } from './types.js';

export const DRIFT_REASONS = [
  'ReadyFalse',
  'GenerationChanged',
  'SourcesDigestChanged',
  'InventoryMismatch',
  'ArtifactMissing',
  'ExternalArtifactsDiffer',
] as const;
export type DriftReason = (typeof DRIFT_REASONS)[number];

export interface StorageState {
  /** A stored artifact is missing or corrupt. */
  artifactMissing: boolean;
}

export function detectDrift(
  ag: SimAg,
  currentSourcesDigest: string,
  storage: StorageState,
): DriftReason | undefined {
  const ready = findCondition(ag.status?.conditions, READY);
  if (ready?.status === 'False') return 'ReadyFalse';
  if ((ag.metadata.generation ?? 0) !== (ready?.observedGeneration ?? 0))
    return 'GenerationChanged';
  if ((ag.status?.observedSourcesDigest ?? '') !== currentSourcesDigest)
    return 'SourcesDigestChanged';
  if ((ag.status?.inventory?.length ?? 0) !== artifactCount(ag)) return 'InventoryMismatch';
  if (storage.artifactMissing) return 'ArtifactMissing';
  return undefined;
}
