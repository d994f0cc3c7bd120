// A requestedAt bumped by someone else (flux reconcile, a person, another tool) during a wait
// window is not an interrupted force of ours (issue 12, item 3). Our force writes requestedAt
// last, equal to its claim's last-recovery-at; a requestedAt later than the claim was written
// after it, by someone else, and must not make us mark and bump again.

import { describe, expect, it } from 'vitest';
import {
  decide,
  formatTimeNano,
  nextCheckAt,
  RESUME_SETTLE_MS,
  type ArtifactGenerator,
  type Decision,
  type GateReason,
} from '../../../shared/core/index.js';
import { force, resume, wait } from './decisions.js';
import { CFG, makeAg, MIN, SEC, STALL } from './fixtures.js';
import { marker, progressing } from '../../support/conditions.js';

const CLAIM = STALL + 5 * MIN;
const NOW = CLAIM + RESUME_SETTLE_MS + 5 * SEC;

/** Attempt 2 claimed at CLAIM (backoff 60 s); Ready as given; requestedAt as given. */
const claimed = (requestedAt: number | string | undefined, ready = marker(CLAIM)) =>
  makeAg({
    ready,
    attempts: '2',
    last: CLAIM,
    ...(requestedAt === undefined ? {} : { requestedAt }),
  });

describe('decide: a foreign requestedAt is not an unfinished force', () => {
  const waiting = (gate: GateReason): Decision => wait(2, CLAIM + MIN, gate);
  const resuming = (gate: GateReason): Decision => resume(2, gate);
  it.each<[string, ArtifactGenerator, Decision]>([
    // Foreign: written after our claim.
    [
      'flux reconcile 5 s after the claim (marker in place)',
      claimed(CLAIM + 5 * SEC),
      waiting('own-marker'),
    ],
    [
      'flux reconcile after the claim; source-watcher already Progressing',
      claimed(CLAIM + 5 * SEC, progressing(CLAIM + 6 * SEC)),
      waiting('rebuilding'),
    ],
    ['one millisecond after the claim', claimed(CLAIM + 1), waiting('own-marker')],
    ['a person writes a time far ahead', claimed('2099-01-01T00:00:00Z'), waiting('own-marker')],
    [
      'RFC 3339 without fraction, after the claim',
      claimed(new Date(CLAIM + 2 * SEC).toISOString().replace('.000', '')),
      waiting('own-marker'),
    ],
    // Ours: the force is finished.
    ['equal to the claim', claimed(CLAIM), waiting('own-marker')],
    // Ours, unfinished: the bump before the claim is still there, or none, or unreadable.
    ['older than the claim (the previous bump)', claimed(CLAIM - 2 * MIN), resuming('own-marker')],
    ['missing', claimed(undefined), resuming('own-marker')],
    ['not a time', claimed('now'), resuming('own-marker')],
    [
      'older than the claim; marker write lost too',
      claimed(CLAIM - 2 * MIN, progressing(STALL)),
      resuming('rebuilding'),
    ],
  ])('%s', (_label, ag, decision) => {
    expect(decide(ag, NOW, CFG)).toEqual(decision);
  });

  it('a foreign bump arms no resume check: the next check is the end of the window', () => {
    expect(nextCheckAt(claimed(CLAIM + 5 * SEC), CLAIM + SEC, CFG)).toBe(CLAIM + MIN);
    // ...whereas an unfinished force of ours is re-checked after the settle time.
    expect(nextCheckAt(claimed(CLAIM - 2 * MIN), CLAIM + SEC, CFG)).toBe(CLAIM + RESUME_SETTLE_MS);
  });

  it('after the window a foreign bump does not stop the next force', () => {
    expect(decide(claimed(CLAIM + 5 * SEC), CLAIM + MIN, CFG)).toEqual(force(3, 'own-marker'));
  });
});

describe('decide: migration from the reference driver (issue 12, item 4)', () => {
  // The reference writes one string, Go's time.RFC3339Nano of the force time (trailing zeros of
  // the fraction dropped), to both requestedAt and last-recovery-at in one metadata patch.
  it.each([
    ['with a fraction', '2026-11-29T16:35:00.1234Z'],
    ['whole seconds (Go drops the fraction)', '2026-11-29T16:35:00Z'],
    ['nanoseconds', '2026-11-29T16:35:00.123456789Z'],
  ])('a reference force (%s) is finished: wait, no extra mark or bump', (_label, stamp) => {
    const at = Date.parse(stamp);
    const ag = makeAg({ ready: marker(at), attempts: '2', last: stamp, requestedAt: stamp });
    expect(decide(ag, at + RESUME_SETTLE_MS + SEC, CFG)).toMatchObject({
      kind: 'wait',
      attempts: 2,
    });
    expect(decide(ag, at + MIN, CFG)).toMatchObject({ kind: 'force', attempt: 3 });
  });

  it('our own force writes the same instant to both annotations', () => {
    const ag = makeAg({ attempts: '1', last: CLAIM, requestedAt: formatTimeNano(CLAIM) });
    expect(decide(ag, CLAIM + RESUME_SETTLE_MS, CFG).kind).toBe('wait');
  });
});
