import { describe, expect, it } from 'vitest';
import { gateReason, type ArtifactGenerator, type GateReason } from '../../../shared/core/index.js';
import { CFG, claimedAg, makeAg, MIN, SEC, STALL } from './fixtures.js';
import { buildFailed, marker, progressing, succeeded } from '../../support/conditions.js';

const NOW = STALL + 10 * MIN;

describe('gateReason', () => {
  it.each<[string, ArtifactGenerator, number, GateReason | null]>([
    ['own marker still within its window', claimedAg(1, NOW - 5 * SEC), NOW, 'own-marker'],
    ['a stale own marker', claimedAg(2, STALL), NOW, 'own-marker'],
    ['own marker with no tracking at all', makeAg({ ready: marker(STALL) }), NOW, 'own-marker'],
    [
      'own marker, status True (whatever its status)',
      makeAg({ ready: { ...marker(STALL), status: 'True' } }),
      NOW,
      'own-marker',
    ],
    [
      'a marker after a spec edit (older observedGeneration)',
      makeAg({ generation: 3, ready: marker(STALL, 2), attempts: '1', last: STALL }),
      NOW,
      'own-marker',
    ],
    [
      'Progressing during recovery (attempts > 0, Unknown on current gen)',
      makeAg({ ready: progressing(NOW - SEC), attempts: '1', last: NOW - 2 * SEC }),
      NOW,
      'rebuilding',
    ],
    [
      'Progressing on an older generation during recovery',
      makeAg({
        generation: 2,
        ready: progressing(NOW - SEC, 1),
        attempts: '1',
        last: NOW - 2 * SEC,
      }),
      NOW,
      null,
    ],
    ['Progressing within grace, no attempts', makeAg({ ready: progressing(NOW - SEC) }), NOW, null],
    [
      'Progressing with malformed attempts within grace',
      makeAg({ ready: progressing(NOW - SEC), attempts: 'x' }),
      NOW,
      null,
    ],
    ['stuck past grace', makeAg(), NOW, 'stuck'],
    ['healthy True closes it', makeAg({ ready: succeeded(NOW - MIN) }), NOW, null],
    [
      'healthy True closes it even with tracking',
      makeAg({ ready: succeeded(NOW - MIN), attempts: '3', last: NOW - MIN }),
      NOW,
      null,
    ],
    [
      'upstream False closes it',
      makeAg({ ready: buildFailed(NOW - MIN), attempts: '2', last: NOW - MIN }),
      NOW,
      null,
    ],
  ])('%s -> %s', (_label, ag, now, reason) => {
    expect(gateReason(ag, now, CFG)).toBe(reason);
  });
});
