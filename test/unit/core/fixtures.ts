// Builders for ArtifactGenerators and PackageSources used by the core unit tests (their Ready
// conditions: ./ready-conditions.ts).

import {
  ANNOTATION_ATTEMPTS,
  ANNOTATION_LAST_RECOVERY_AT,
  ANNOTATION_REQUESTED_AT,
  DEFAULT_RECOVERY_CONFIG,
  REFERENCE_GRACE_PERIOD_MS,
  formatTimeNano,
  formatTimeSeconds,
  type ArtifactGenerator,
  type Condition,
  type PackageSource,
  type RecoveryConfig,
} from '../../../shared/core/index.js';
import { progressing } from './ready-conditions.js';

export const SEC = 1000;
export const MIN = 60 * SEC;
/** The moment the fixture AG lost its Ready verdict (its Ready lastTransitionTime). */
export const STALL = Date.UTC(2026, 10, 29, 16, 30, 0);
/**
 * The core tables are written against the reference driver's 30 s grace period (DESIGN §3); the
 * product's own default (2m30s) is covered by the config tests and the timeline property below.
 */
export const CFG: RecoveryConfig = Object.freeze({
  ...DEFAULT_RECOVERY_CONFIG,
  gracePeriodMs: REFERENCE_GRACE_PERIOD_MS,
});

export const cfgWith = (over: Partial<RecoveryConfig>): RecoveryConfig => ({ ...CFG, ...over });

export const reconciling: Condition = {
  type: 'Reconciling',
  status: 'True',
  reason: 'Progressing',
  message: 'Reconciliation in progress',
  lastTransitionTime: formatTimeSeconds(STALL),
  observedGeneration: 1,
};

export interface AgShape {
  /** Ready condition; null = no Ready condition at all. Default: Progressing at STALL. */
  ready?: Condition | null;
  generation?: number;
  inventory?: boolean;
  digest?: boolean;
  /** Forces claimed so far (annotation omitted when undefined). */
  attempts?: string;
  /** last-recovery-at as epoch ms (formatted) or a raw string. */
  last?: number | string;
  /** requestedAt as epoch ms (formatted) or a raw string. */
  requestedAt?: number | string;
  created?: number;
  deleting?: boolean;
  extraConditions?: Condition[];
}

/** A stuck AG by default: inventory + digest saved, Ready Unknown/Progressing since STALL. */
export function makeAg(shape: AgShape = {}): ArtifactGenerator {
  const generation = shape.generation ?? 1;
  const annotations: Record<string, string> = { 'kept.example.com/other': 'x' };
  if (shape.attempts !== undefined) annotations[ANNOTATION_ATTEMPTS] = shape.attempts;
  if (shape.last !== undefined) {
    annotations[ANNOTATION_LAST_RECOVERY_AT] =
      typeof shape.last === 'number' ? formatTimeNano(shape.last) : shape.last;
  }
  if (shape.requestedAt !== undefined) {
    annotations[ANNOTATION_REQUESTED_AT] =
      typeof shape.requestedAt === 'number' ? formatTimeNano(shape.requestedAt) : shape.requestedAt;
  }
  const ready = shape.ready === undefined ? progressing(STALL, generation) : shape.ready;
  const conditions: Condition[] = [...(shape.extraConditions ?? [reconciling])];
  if (ready !== null) conditions.push(ready);
  const ag: ArtifactGenerator = {
    apiVersion: 'source.extensions.fluxcd.io/v1beta1',
    kind: 'ArtifactGenerator',
    metadata: {
      name: 'cozystack-platform',
      namespace: 'cozy-system',
      uid: 'ag-uid-1',
      resourceVersion: '100',
      generation,
      creationTimestamp: formatTimeSeconds(shape.created ?? STALL - 10 * MIN),
      annotations,
      ownerReferences: [
        {
          apiVersion: 'cozystack.io/v1alpha1',
          kind: 'PackageSource',
          name: 'cozystack-platform',
          uid: 'ps-uid-1',
          controller: true,
        },
      ],
    },
    status: { conditions },
  };
  if (shape.deleting === true && ag.metadata) {
    ag.metadata.deletionTimestamp = formatTimeSeconds(STALL);
  }
  if (shape.inventory !== false && ag.status) {
    ag.status.inventory = [
      { name: 'platform', namespace: 'cozy-system', digest: 'sha256:1', filename: 'a.tar.gz' },
    ];
  }
  if (shape.digest !== false && ag.status) ag.status.observedSourcesDigest = 'sha256:sources';
  return ag;
}

export function makePs(ready?: Condition, generation = 7): PackageSource {
  const conditions: Condition[] = [];
  if (ready) conditions.push(ready);
  return {
    apiVersion: 'cozystack.io/v1alpha1',
    kind: 'PackageSource',
    metadata: { name: 'cozystack-platform', generation, resourceVersion: '55' },
    status: { conditions },
  };
}
