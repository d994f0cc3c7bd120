import { describe, expect, it } from 'vitest';
import {
  formatTimeNano,
  hasMarker,
  markerCondition,
  markerConditions,
  requestedAtFor,
  type ArtifactGenerator,
} from '../../../shared/core/index.js';
import { makeAg, STALL } from './fixtures.js';
import {
  buildFailed,
  marker,
  progressing,
  reconciling,
  succeeded,
} from '../../support/conditions.js';

const NOW = Date.UTC(2026, 10, 29, 16, 35, 7, 450);

describe('markerCondition', () => {
  it('is Ready=False/SourceWatcherRecoveryForced on the current generation', () => {
    expect(markerCondition(makeAg({ generation: 4, ready: progressing(STALL, 4) }), NOW)).toEqual({
      type: 'Ready',
      status: 'False',
      reason: 'SourceWatcherRecoveryForced',
      message:
        'forced by source-watcher-recovery: Ready was lost on generation 4 (fluxcd/pkg#934); requesting a rebuild',
      observedGeneration: 4,
      lastTransitionTime: '2026-11-29T16:35:07Z',
    });
  });

  it('replaces only Ready, keeping every other condition as read', () => {
    const ag = makeAg();
    const before = structuredClone(ag);
    const out = markerConditions(ag, NOW);
    expect(out).toEqual([reconciling(STALL), markerCondition(ag, NOW)]);
    expect(ag).toEqual(before);
  });

  it('appends Ready when it was missing', () => {
    const ag = makeAg({ ready: null });
    expect(markerConditions(ag, NOW)).toEqual([reconciling(STALL), markerCondition(ag, NOW)]);
  });
});

describe('hasMarker', () => {
  it.each<[string, ArtifactGenerator, boolean]>([
    ['marker on current generation', makeAg({ ready: marker(STALL) }), true],
    ['marker on an older generation', makeAg({ generation: 2, ready: marker(STALL, 1) }), false],
    [
      'marker reason with status Unknown',
      makeAg({ ready: { ...marker(STALL), status: 'Unknown' } }),
      false,
    ],
    ['Progressing', makeAg(), false],
    ['True', makeAg({ ready: succeeded(STALL) }), false],
    ['upstream False', makeAg({ ready: buildFailed(STALL) }), false],
    ['no Ready', makeAg({ ready: null }), false],
  ])('%s -> %s', (_label, ag, expected) => {
    expect(hasMarker(ag)).toBe(expected);
  });
});

describe('requestedAtFor', () => {
  it('is the same string as last-recovery-at', () => {
    expect(requestedAtFor(NOW)).toBe('2026-11-29T16:35:07.450000000Z');
    expect(requestedAtFor(NOW)).toBe(formatTimeNano(NOW));
  });
});
