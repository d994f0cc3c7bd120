import { describe, expect, it } from 'vitest';
import { ALARM_MARGIN_MS, alarmMoment, armedTooLate } from '../../../shared/core/index.js';

const M = Date.UTC(2026, 11, 1, 12, 0, 0);

describe('armedTooLate: a write that completes with less than half the margin left', () => {
  it.each<[string, number, boolean]>([
    ['written at once (the whole margin left)', M - ALARM_MARGIN_MS, false],
    ['exactly half the margin left', M - ALARM_MARGIN_MS / 2, false],
    ['less than half the margin left', M - ALARM_MARGIN_MS / 2 + 1, true],
    ['after the moment', M + 3_000, true],
  ])('%s', (_label, completedAt, late) => {
    expect(armedTooLate(M, completedAt)).toBe(late);
  });

  it('moving a late moment out gives a whole second at least the margin ahead', () => {
    const completedAt = M + 3_400;
    const again = alarmMoment(M, completedAt);
    expect(again).toBe(M + 6_000);
    expect(armedTooLate(again, completedAt)).toBe(false);
  });
});
