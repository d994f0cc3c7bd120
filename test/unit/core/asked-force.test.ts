// unfinishedAskedForce: a force event that finds the force it asked for claimed but unfinished
// (docs/adr/0044-recovery-under-load.md).

import { describe, expect, it } from 'vitest';
import {
  ASKED_RESUME_SETTLE_MS,
  unfinishedAskedForce,
  decide,
  formatTimeNano,
  type ArtifactGenerator,
} from '../../../shared/core/index.js';
import { CFG, claimedAg, makeAg, MIN, STALL } from './fixtures.js';
import { progressing, succeeded } from '../../support/conditions.js';

const CLAIM = STALL + 3 * MIN;

describe('unfinishedAskedForce', () => {
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
      claimedAg(2, CLAIM),
      1,
      CLAIM + 5_000,
      'resume',
    ],
    [
      'its claim, younger than the settle: in flight',
      claimedAg(2, CLAIM),
      1,
      CLAIM + ASKED_RESUME_SETTLE_MS - 1,
      'in-flight',
    ],
    [
      'its claim, requestedAt older than the claim: resume',
      claimedAg(1, CLAIM, { requestedAt: CLAIM - MIN }),
      0,
      CLAIM + 3_000,
      'resume',
    ],
    [
      'its claim finished (requestedAt = the claim): nothing',
      claimedAg(1, CLAIM, { requestedAt: formatTimeNano(CLAIM) }),
      0,
      CLAIM + 3_000,
      null,
    ],
    [
      'a foreign requestedAt after the claim: nothing',
      claimedAg(1, CLAIM, { requestedAt: CLAIM + 1_000 }),
      0,
      CLAIM + 3_000,
      null,
    ],
    [
      'another attempt asked (a stale event from before an earlier force): nothing',
      claimedAg(2, CLAIM),
      0,
      CLAIM + 3_000,
      null,
    ],
    ['a later attempt asked than claimed: nothing', claimedAg(1, CLAIM), 1, CLAIM + 3_000, null],
    ['no claim at all: nothing', makeAg({ ready: progressing(STALL) }), 0, CLAIM, null],
    [
      'healthy again (the decision is not wait): nothing',
      makeAg({ ready: succeeded(CLAIM + 1_000), attempts: '1', last: CLAIM }),
      0,
      CLAIM + 3_000,
      null,
    ],
  ])('%s', (_label, ag, asked, now, want) => {
    expect(unfinishedAskedForce(decide(ag, now, CFG), ag, now, CFG, asked)).toBe(want);
  });

  it('past the 10 s settle the decision itself is resume, so the rule adds nothing there', () => {
    const ag = claimedAg(1, CLAIM);
    const d = decide(ag, CLAIM + 10_000, CFG);
    expect(d.kind).toBe('resume');
    expect(unfinishedAskedForce(d, ag, CLAIM + 10_000, CFG, 0)).toBeNull();
  });
});
