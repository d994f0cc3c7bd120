// Owed Kubernetes Events (docs/adr/0061-owed-events.md): which step a force action's delivery finds
// recorded on the AG, whose Event it may still owe, and for how long an unwritten Event is owed.

import { describe, expect, it } from 'vitest';
import {
  askedStepOnAg,
  buildEvent,
  forcedStep,
  formatTimeNano,
  OWED_EVENT_MAX_AGE_MS,
  owedEventDue,
  type AskedStep,
  type ArtifactGenerator,
} from '../../../shared/core/index.js';
import { CFG, claimedAg, makeAg, MIN, STALL } from './fixtures.js';
import { progressing, succeeded } from '../../support/conditions.js';

const CLAIM = STALL + 3 * MIN;
/** The claim's force finished: requestedAt = the claim. */
const finished = (attempts: number, over = {}) =>
  claimedAg(attempts, CLAIM, { requestedAt: formatTimeNano(CLAIM), ...over });

describe('askedStepOnAg', () => {
  it.each<[string, ArtifactGenerator, number | null, number, AskedStep]>([
    [
      'the finished force the action asked for: its step, at the claim',
      finished(1),
      0,
      CLAIM + 2_000,
      { kind: 'recorded', step: forcedStep(1, CLAIM, CFG), stepAt: CLAIM },
    ],
    [
      'attempt 3, asked by an action that saw 2: its step',
      finished(3),
      2,
      CLAIM + 30_000,
      { kind: 'recorded', step: forcedStep(3, CLAIM, CFG), stepAt: CLAIM },
    ],
    [
      'finished, and source-watcher already answered (Ready True): the step is still recorded',
      finished(1, { ready: succeeded(CLAIM + 1_000) }),
      0,
      CLAIM + 5_000,
      { kind: 'recorded', step: forcedStep(1, CLAIM, CFG), stepAt: CLAIM },
    ],
    [
      'at the edge of the owed window: still recorded',
      finished(1),
      0,
      CLAIM + OWED_EVENT_MAX_AGE_MS,
      { kind: 'recorded', step: forcedStep(1, CLAIM, CFG), stepAt: CLAIM },
    ],
    [
      'past the owed window: expired',
      finished(1),
      0,
      CLAIM + OWED_EVENT_MAX_AGE_MS + 1,
      { kind: 'none', why: 'expired' },
    ],
    [
      'claimed but unfinished (no requestedAt): a resume, not an owed Event',
      claimedAg(1, CLAIM),
      0,
      CLAIM + 2_000,
      { kind: 'none', why: 'unfinished' },
    ],
    [
      'requestedAt older than the claim: unfinished',
      claimedAg(1, CLAIM, { requestedAt: CLAIM - MIN }),
      0,
      CLAIM + 2_000,
      { kind: 'none', why: 'unfinished' },
    ],
    [
      'another attempt recorded than the one asked for (a stale action): nothing',
      finished(2),
      0,
      CLAIM + 2_000,
      { kind: 'none', why: 'not-asked' },
    ],
    [
      'no tracking (never forced, or cleared): nothing',
      makeAg({ ready: progressing(STALL) }),
      0,
      CLAIM,
      { kind: 'none', why: 'not-asked' },
    ],
    [
      'a claim time more than the skew ahead reads as long ago: nothing',
      claimedAg(1, CLAIM + 10 * MIN, { requestedAt: formatTimeNano(CLAIM + 10 * MIN) }),
      0,
      CLAIM,
      { kind: 'none', why: 'not-asked' },
    ],
    [
      'not a force action (clear-tracking): nothing',
      finished(1),
      null,
      CLAIM + 2_000,
      { kind: 'none', why: 'not-a-force' },
    ],
  ])('%s', (_label, ag, asked, now, want) => {
    expect(askedStepOnAg(ag, now, CFG, asked)).toEqual(want);
  });

  it("names the step's Event as the forcer did (the gate is not part of the name)", () => {
    const subject = { namespace: 'cozy-system', name: 'platform', uid: 'u-1' };
    const asked = askedStepOnAg(finished(1), CLAIM + 2_000, CFG, 0);
    if (asked.kind !== 'recorded') throw new Error('expected a recorded step');
    const owed = buildEvent(asked.step, subject, 'other-replica', asked.stepAt);
    for (const gate of ['stuck', 'lost-write'] as const) {
      const forcer = buildEvent(forcedStep(1, CLAIM, CFG, gate), subject, 'forcer', CLAIM);
      expect(owed.metadata.name).toBe(forcer.metadata.name);
      expect(owed.reason).toBe(forcer.reason);
      expect(forcer.note.startsWith(owed.note)).toBe(true);
    }
    expect(owed.eventTime).toBe(buildEvent(asked.step, subject, 'x', CLAIM).eventTime);
  });
});

describe('owedEventDue', () => {
  it.each<[string, number, 'write' | 'expired']>([
    ['at once', 0, 'write'],
    ['a redelivery a few seconds on', 7_000, 'write'],
    ['the window itself', OWED_EVENT_MAX_AGE_MS, 'write'],
    ['past it', OWED_EVENT_MAX_AGE_MS + 1, 'expired'],
    ['a step stamped ahead of this clock (skew)', -5_000, 'write'],
  ])('%s', (_label, age, want) => {
    expect(owedEventDue(CLAIM, CLAIM + age)).toBe(want);
  });

  it('the window ends well before the Broker gives up on an action (9 retries, about 8.5 min)', () => {
    const retries = Array.from({ length: 9 }, (_, i) => 2 ** i * 1000);
    const lastTry = retries.reduce((a, b) => a + b, 0);
    expect(OWED_EVENT_MAX_AGE_MS * 2).toBeLessThan(lastTry);
  });
});
