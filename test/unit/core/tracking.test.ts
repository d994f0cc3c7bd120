import { describe, expect, it } from 'vitest';
import {
  ANNOTATION_ATTEMPTS,
  ANNOTATION_FIRST_RECOVERY_AT,
  ANNOTATION_LAST_RECOVERY_AT,
  ANNOTATION_REQUESTED_AT,
  claimAnnotations,
  clearTrackingPatch,
  readTracking,
  stallSeconds,
  type ArtifactGenerator,
} from '../../../shared/core/index.js';
import { CFG, MIN, SEC, STALL } from './fixtures.js';

const NOW = STALL + 5 * MIN;

function agWithAnnotations(annotations: unknown): ArtifactGenerator {
  return {
    metadata: { name: 'a', namespace: 'n', annotations: annotations as Record<string, string> },
  };
}

describe('readTracking: attempts codec hardening', () => {
  it.each<[string, unknown, number]>([
    ['missing', undefined, 0],
    ['empty', '', 0],
    ['letters', 'abc', 0],
    ['negative', '-1', 0],
    ['fraction', '1.5', 0],
    ['leading space', ' 3', 0],
    ['trailing space', '3 ', 0],
    ['leading plus', '+3', 0],
    ['exponent', '1e3', 0],
    ['hex', '0x3', 0],
    ['huge', '99999999999999999999', 0],
    ['above the cap', '1001', 0],
    ['at the cap', '1000', 1000],
    ['number, not string', 3, 0],
    ['null', null, 0],
    ['zero', '0', 0],
    ['three', '3', 3],
    ['zero-padded', '007', 7],
  ])('%s (%j) -> %d', (_label, value, attempts) => {
    const annotations = value === undefined ? {} : { [ANNOTATION_ATTEMPTS]: value };
    expect(readTracking(agWithAnnotations(annotations), NOW, CFG).attempts).toBe(attempts);
  });
});

describe('readTracking: last-recovery-at codec hardening', () => {
  const base = Date.UTC(2026, 10, 29, 16, 30, 6);
  it.each<[string, unknown, number | null]>([
    ['missing', undefined, null],
    ['garbage', 'yesterday', null],
    ['number', 1_700_000_000_000, null],
    ['RFC3339Nano, trimmed zeros', '2026-11-29T16:30:06.12Z', base + 120],
    ['nine digits', '2026-11-29T16:30:06.123456789Z', base + 123],
    ['no fraction', '2026-11-29T16:30:06Z', base],
    ['offset', '2026-11-29T18:30:06.5+02:00', base + 500],
    ['impossible date', '2026-02-30T16:30:06Z', null],
  ])('%s (%j)', (_label, value, expected) => {
    const annotations = value === undefined ? {} : { [ANNOTATION_LAST_RECOVERY_AT]: value };
    expect(readTracking(agWithAnnotations(annotations), NOW, CFG).lastRecoveryAt).toBe(expected);
  });

  it.each<[string, number, boolean]>([
    ['10 minutes in the future -> malformed', 10 * MIN, false],
    ['61 s in the future -> malformed', 61 * SEC, false],
    ['exactly the 60 s skew allowance -> kept', 60 * SEC, true],
    ['30 s in the future -> kept', 30 * SEC, true],
    ['in the past -> kept', -30 * SEC, true],
  ])('%s', (_label, ahead, kept) => {
    const at = NOW + ahead;
    const ag = agWithAnnotations({
      [ANNOTATION_LAST_RECOVERY_AT]: new Date(at).toISOString(),
    });
    expect(readTracking(ag, NOW, CFG).lastRecoveryAt).toBe(kept ? at : null);
  });
});

describe('readTracking: presence', () => {
  it.each<[string, unknown, boolean]>([
    ['no annotations', undefined, false],
    ['annotations not an object', 'junk', false],
    ['only requestedAt', { [ANNOTATION_REQUESTED_AT]: 'x' }, false],
    ['attempts with junk value', { [ANNOTATION_ATTEMPTS]: 'junk' }, true],
    ['last-recovery-at only', { [ANNOTATION_LAST_RECOVERY_AT]: '' }, true],
    ['both', { [ANNOTATION_ATTEMPTS]: '2', [ANNOTATION_LAST_RECOVERY_AT]: 'x' }, true],
  ])('%s -> present=%s', (_label, annotations, present) => {
    expect(readTracking(agWithAnnotations(annotations), NOW, CFG).present).toBe(present);
  });

  it('tolerates an AG without metadata', () => {
    expect(readTracking({}, NOW, CFG)).toEqual({
      attempts: 0,
      lastRecoveryAt: null,
      firstRecoveryAt: null,
      present: false,
    });
  });
});

describe('claim and clear patches', () => {
  it('claims attempt N at now with nanosecond precision', () => {
    expect(claimAnnotations(3, Date.UTC(2026, 10, 29, 16, 30, 6, 123))).toEqual({
      [ANNOTATION_ATTEMPTS]: '3',
      [ANNOTATION_LAST_RECOVERY_AT]: '2026-11-29T16:30:06.123000000Z',
    });
  });

  it('a claim reads back as written', () => {
    const ag = agWithAnnotations(claimAnnotations(4, NOW - 7));
    expect(readTracking(ag, NOW, CFG)).toEqual({
      attempts: 4,
      lastRecoveryAt: NOW - 7,
      firstRecoveryAt: null,
      present: true,
    });
  });

  it('attempt 1 also stamps the first claim; later attempts leave it as it is', () => {
    const at = Date.UTC(2026, 10, 29, 16, 30, 6, 123);
    expect(claimAnnotations(1, at)).toEqual({
      [ANNOTATION_ATTEMPTS]: '1',
      [ANNOTATION_LAST_RECOVERY_AT]: '2026-11-29T16:30:06.123000000Z',
      [ANNOTATION_FIRST_RECOVERY_AT]: '2026-11-29T16:30:06.123000000Z',
    });
    expect(Object.keys(claimAnnotations(2, at))).not.toContain(ANNOTATION_FIRST_RECOVERY_AT);
    // A merge patch of attempt 3 over attempt 1's annotations keeps the first claim.
    const ag = agWithAnnotations({
      ...claimAnnotations(1, NOW - 9 * MIN),
      ...claimAnnotations(3, NOW - MIN),
    });
    expect(readTracking(ag, NOW, CFG)).toMatchObject({
      attempts: 3,
      lastRecoveryAt: NOW - MIN,
      firstRecoveryAt: NOW - 9 * MIN,
    });
  });

  it('clears the tracking keys (the first claim too) and leaves requestedAt alone', () => {
    expect(clearTrackingPatch()).toEqual({
      [ANNOTATION_ATTEMPTS]: null,
      [ANNOTATION_LAST_RECOVERY_AT]: null,
      [ANNOTATION_FIRST_RECOVERY_AT]: null,
    });
  });
});

describe('readTracking: first-recovery-at codec (backwards compatible)', () => {
  const last = NOW - MIN;
  const lastText = new Date(last).toISOString();
  it.each<[string, Record<string, unknown>, number | null, boolean]>([
    ['absent (tracking written before it existed)', {}, null, true],
    ['garbage', { [ANNOTATION_FIRST_RECOVERY_AT]: 'yesterday' }, null, true],
    ['a number, not a string', { [ANNOTATION_FIRST_RECOVERY_AT]: 5 }, null, true],
    [
      'before the last claim',
      { [ANNOTATION_FIRST_RECOVERY_AT]: new Date(last - 5 * MIN).toISOString() },
      last - 5 * MIN,
      true,
    ],
    ['equal to the last claim', { [ANNOTATION_FIRST_RECOVERY_AT]: lastText }, last, true],
    [
      'after the last claim',
      { [ANNOTATION_FIRST_RECOVERY_AT]: new Date(last + SEC).toISOString() },
      null,
      true,
    ],
    [
      'without a last claim (an orphan)',
      { [ANNOTATION_LAST_RECOVERY_AT]: undefined, [ANNOTATION_FIRST_RECOVERY_AT]: lastText },
      null,
      false,
    ],
  ])('%s', (_label, extra, first, present) => {
    const annotations: Record<string, unknown> = {
      [ANNOTATION_ATTEMPTS]: '2',
      [ANNOTATION_LAST_RECOVERY_AT]: lastText,
      ...extra,
    };
    for (const k of Object.keys(annotations))
      if (annotations[k] === undefined) delete annotations[k];
    if (!present) delete annotations[ANNOTATION_ATTEMPTS];
    const t = readTracking(agWithAnnotations(annotations), NOW, CFG);
    expect(t.firstRecoveryAt).toBe(first);
    expect(t.present).toBe(present);
    // The decision's fields read as before, whatever the first claim holds.
    expect(t.attempts).toBe(present ? 2 : 0);
  });
});

describe('stallSeconds: the first claim to the outcome', () => {
  const tracking = (attempts: number, first: number | null) => ({
    attempts,
    lastRecoveryAt: first,
    firstRecoveryAt: first,
    present: true,
  });
  it.each<[string, ReturnType<typeof tracking>, number | undefined]>([
    ['7 minutes', tracking(5, NOW - 7 * MIN), 420],
    ['at once', tracking(1, NOW), 0],
    ['first claim unknown', tracking(3, null), undefined],
    ['no claim', tracking(0, NOW - MIN), undefined],
    ['first claim ahead of now (skew)', tracking(1, NOW + SEC), undefined],
  ])('%s', (_label, t, seconds) => {
    expect(stallSeconds(t, NOW)).toBe(seconds);
  });
});
