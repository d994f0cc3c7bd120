// askedForceState: a force event that finds the force it asked for claimed but unfinished
// (docs/adr/0044-recovery-under-load.md).

import { describe, expect, it } from 'vitest';
import {
  ASKED_RESUME_SETTLE_MS,
  askedForceState,
  decide,
  formatTimeNano,
  type ArtifactGenerator,
} from '../../../shared/core/index.js';
import { CFG, makeAg, MIN, STALL } from './fixtures.js';
import { marker, progressing, succeeded } from './ready-conditions.js';

const CLAIM = STALL + 3 * MIN;

describe('askedForceState', () => {
  it.each<[string, ArtifactGenerator, number, number, 'resume' | 'in-flight' | null]>([
    [
      'its claim, marker lost, settled: resume',
      makeAg({ ready: progressing(STALL), attempts: '1', last: CLAIM }),
      0,
      CLAIM + ASKED_RESUME_SETTLE_MS,
      'resume',
    ],
    [
      'its claim, marker written, bump lost: resume',
      makeAg({ ready: marker(CLAIM), attempts: '2', last: CLAIM }),
      1,
      CLAIM + 5_000,
      'resume',
    ],
    [
      'its claim, younger than the settle: in flight',
      makeAg({ ready: marker(CLAIM), attempts: '2', last: CLAIM }),
      1,
      CLAIM + ASKED_RESUME_SETTLE_MS - 1,
      'in-flight',
    ],
    [
      'its claim, requestedAt older than the claim: resume',
      makeAg({ ready: marker(CLAIM), attempts: '1', last: CLAIM, requestedAt: CLAIM - MIN }),
      0,
      CLAIM + 3_000,
      'resume',
    ],
    [
      'its claim finished (requestedAt = the claim): nothing',
      makeAg({
        ready: marker(CLAIM),
        attempts: '1',
        last: CLAIM,
        requestedAt: formatTimeNano(CLAIM),
      }),
      0,
      CLAIM + 3_000,
      null,
    ],
    [
      'a foreign requestedAt after the claim: nothing',
      makeAg({ ready: marker(CLAIM), attempts: '1', last: CLAIM, requestedAt: CLAIM + 1_000 }),
      0,
      CLAIM + 3_000,
      null,
    ],
    [
      'another attempt asked (a stale event from before an earlier force): nothing',
      makeAg({ ready: marker(CLAIM), attempts: '2', last: CLAIM }),
      0,
      CLAIM + 3_000,
      null,
    ],
    [
      'a later attempt asked than claimed: nothing',
      makeAg({ ready: marker(CLAIM), attempts: '1', last: CLAIM }),
      1,
      CLAIM + 3_000,
      null,
    ],
    ['no claim at all: nothing', makeAg({ ready: progressing(STALL) }), 0, CLAIM, null],
    [
      'healthy again (the decision is not wait): nothing',
      makeAg({ ready: succeeded(CLAIM + 1_000), attempts: '1', last: CLAIM }),
      0,
      CLAIM + 3_000,
      null,
    ],
  ])('%s', (_label, ag, asked, now, want) => {
    expect(askedForceState(decide(ag, now, CFG), ag, now, CFG, asked)).toBe(want);
  });

  it('past the 10 s settle the decision itself is resume, so the rule adds nothing there', () => {
    const ag = makeAg({ ready: marker(CLAIM), attempts: '1', last: CLAIM });
    const d = decide(ag, CLAIM + 10_000, CFG);
    expect(d.kind).toBe('resume');
    expect(askedForceState(d, ag, CLAIM + 10_000, CFG, 0)).toBeNull();
  });
});
