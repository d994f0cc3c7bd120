import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RECOVERY_CONFIG,
  nextCheckAt,
  parseArtifactGenerator,
} from '../../../shared/core/index.js';
import { progressing } from '../../support/conditions.js';

describe('parseArtifactGenerator: names must be Kubernetes names', () => {
  it.each([
    ['upper case name', 'Bad', 'cozy-system', false],
    ['a NUL in the namespace', 'ok', 'cozy\u0000system', false],
    ['a dotted namespace', 'ok', 'a.b', false],
    ['a 64-character namespace', 'ok', 'n'.repeat(64), false],
    ['a 254-character name', 'n'.repeat(254), 'cozy-system', false],
    ['a dotted name', 'a.b-c', 'cozy-system', true],
    ['a 253-character name and a 63-character namespace', 'n'.repeat(253), 'n'.repeat(63), true],
  ])('%s', (_n, name, namespace, ok) => {
    expect(parseArtifactGenerator({ metadata: { name, namespace } }).ok).toBe(ok);
  });
});

describe('nextCheckAt: a Ready time far in the future arms nothing', () => {
  const now = Date.parse('2026-06-01T00:00:00Z');
  const ag = (since: string) => ({
    metadata: { name: 'x', namespace: 'y', generation: 1 },
    status: {
      inventory: [{ name: 'a', namespace: 'y', digest: 'sha256:1', filename: 'a.tgz' }],
      observedSourcesDigest: 'sha256:2',
      conditions: [{ ...progressing(now), lastTransitionTime: since }],
    },
  });
  it.each([
    ['year 9999', '9999-12-31T23:59:59Z', null],
    ['an hour ahead (beyond the skew allowance)', '2026-06-01T01:00:00Z', null],
    [
      'ten seconds ahead (within the skew allowance)',
      '2026-06-01T00:00:10Z',
      now + 10_000 + 150_000 + 1,
    ],
    ['ten seconds ago', '2026-05-31T23:59:50Z', now + 140_000 + 1],
  ])('%s', (_n, since, expected) => {
    expect(nextCheckAt(ag(since), now, DEFAULT_RECOVERY_CONFIG)).toBe(expected);
  });
});
