// The in-memory ArtifactGenerators and PackageSources of the core unit tests, built on the tests'
// one object and condition vocabulary (test/support/fixture-objects.ts, test/support/conditions.ts).

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
import { marker, progressing, reconciling } from '../../support/conditions.js';
import { makeArtifactGenerator, makePackageSource } from '../../support/fixture-objects.js';

export const SEC = 1000;
export const MIN = 60 * SEC;
/** The moment the fixture AG lost its Ready verdict (its Ready lastTransitionTime). */
export const STALL = Date.UTC(2026, 10, 29, 16, 30, 0);
/**
 * The core tables are written against the reference driver's 30 s grace period (docs/design.md §3); the
 * product's own default (2m30s) is covered by the config tests and the timeline property below.
 */
export const CFG: RecoveryConfig = Object.freeze({
  ...DEFAULT_RECOVERY_CONFIG,
  gracePeriodMs: REFERENCE_GRACE_PERIOD_MS,
});

export const cfgWith = (over: Partial<RecoveryConfig>): RecoveryConfig => ({ ...CFG, ...over });

/** What a unit test's AG differs in (not support/ag-states' `AgShape`, the size of its status). */
export interface AgFixture {
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
  /** The conditions before Ready. Default: Reconciling at STALL. */
  extraConditions?: Condition[];
}

/** A stuck AG by default: inventory + digest saved, Ready Unknown/Progressing since STALL. */
export function makeAg(shape: AgFixture = {}): ArtifactGenerator {
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
  const conditions: Condition[] = [...(shape.extraConditions ?? [reconciling(STALL)])];
  if (ready !== null) conditions.push(ready);
  // Without its spec: no core decision reads it, and the tables' titles print the AG's key count.
  const { spec: _spec, ...base } = makeArtifactGenerator({
    name: 'cozystack-platform',
    namespace: 'cozy-system',
    owner: { name: 'cozystack-platform', uid: 'ps-uid-1' },
    annotations,
  });
  const ag: ArtifactGenerator = {
    ...base,
    metadata: {
      ...base.metadata,
      uid: 'ag-uid-1',
      resourceVersion: '100',
      generation,
      creationTimestamp: formatTimeSeconds(shape.created ?? STALL - 10 * MIN),
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

/** An AG whose force `attempts` was claimed at `at`, our marker written then; `over` adds more. */
export const claimedAg = (attempts: number, at: number, over: AgFixture = {}): ArtifactGenerator =>
  makeAg({ ready: marker(at), attempts: String(attempts), last: at, ...over });

export function makePs(ready?: Condition, generation = 7): PackageSource {
  const conditions: Condition[] = [];
  if (ready) conditions.push(ready);
  const base = makePackageSource({ name: 'cozystack-platform' });
  return {
    ...base,
    metadata: { ...base.metadata, generation, resourceVersion: '55' },
    status: { conditions },
  };
}
