import { describe, expect, it } from 'vitest';
import { isStuck, type ArtifactGenerator } from '../../../shared/core/index.js';
import { CFG, makeAg, MIN, SEC, STALL } from './fixtures.js';
import { buildFailed, marker, progressing, succeeded } from '../../support/conditions.js';

const noStatus = (): ArtifactGenerator => {
  const ag = makeAg();
  delete ag.status;
  return ag;
};

describe('isStuck (docs/design.md §3, the time rule ("stuck"))', () => {
  it.each<[string, ArtifactGenerator, number, boolean]>([
    ['no status', noStatus(), STALL + MIN, false],
    ['inventory only', makeAg({ digest: false }), STALL + MIN, false],
    ['digest only', makeAg({ inventory: false }), STALL + MIN, false],
    [
      'empty inventory',
      { ...makeAg(), status: { ...makeAg().status, inventory: [] } },
      STALL + MIN,
      false,
    ],
    [
      'Ready missing within grace',
      makeAg({ ready: null, created: STALL }),
      STALL + 20 * SEC,
      false,
    ],
    ['Ready missing past grace', makeAg({ ready: null, created: STALL }), STALL + 31 * SEC, true],
    [
      'Ready missing, bad creationTimestamp',
      { ...makeAg({ ready: null }), metadata: { ...makeAg().metadata, creationTimestamp: 'x' } },
      STALL + MIN,
      false,
    ],
    ['Unknown within grace', makeAg(), STALL + 29 * SEC, false],
    ['Unknown exactly at 30 s (not strictly past)', makeAg(), STALL + 30 * SEC, false],
    ['Unknown 1 ms past 30 s', makeAg(), STALL + 30 * SEC + 1, true],
    ['Unknown past grace', makeAg(), STALL + MIN, true],
    [
      'Unknown on an older generation',
      makeAg({ generation: 2, ready: progressing(STALL, 1) }),
      STALL + MIN,
      false,
    ],
    [
      'Unknown without observedGeneration',
      makeAg({
        ready: { ...progressing(STALL), observedGeneration: undefined as unknown as number },
      }),
      STALL + MIN,
      false,
    ],
    [
      'Unknown with unparseable time',
      makeAg({ ready: { ...progressing(STALL), lastTransitionTime: 'soon' } }),
      STALL + MIN,
      false,
    ],
    ['True', makeAg({ ready: succeeded(STALL) }), STALL + MIN, false],
    ['False (upstream)', makeAg({ ready: buildFailed(STALL) }), STALL + MIN, false],
    ['False (our marker)', makeAg({ ready: marker(STALL) }), STALL + MIN, false],
  ])('%s -> %s', (_label, ag, now, stuck) => {
    expect(isStuck(ag, now, CFG)).toBe(stuck);
  });

  it('honours a configured grace period', () => {
    const cfg = { ...CFG, gracePeriodMs: 0 };
    expect(isStuck(makeAg(), STALL, cfg)).toBe(false);
    expect(isStuck(makeAg(), STALL + 1, cfg)).toBe(true);
  });
});
