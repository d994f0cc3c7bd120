import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { formatTimeNano, formatTimeSeconds, parseTime } from '../../../shared/core/index.js';

const BASE = Date.UTC(2026, 10, 29, 16, 30, 6);

describe('parseTime', () => {
  it.each([
    ['2026-11-29T16:30:06Z', BASE],
    ['2026-11-29T16:30:06.123Z', BASE + 123],
    ['2026-11-29T16:30:06.5Z', BASE + 500],
    ['2026-11-29T16:30:06.123000000Z', BASE + 123],
    ['2026-11-29T16:30:06.123456789Z', BASE + 123],
    ['2026-11-29T16:30:06.000000001Z', BASE],
    ['2026-11-29T18:30:06+02:00', BASE],
    ['2026-11-29T11:00:06-05:30', BASE],
    ['2026-11-29T16:30:06+00:00', BASE],
    ['2024-02-29T00:00:00Z', Date.UTC(2024, 1, 29)],
    ['0001-01-01T00:00:00Z', -62_135_596_800_000],
    ['0099-06-01T00:00:00Z', new Date(0).setUTCFullYear(99, 5, 1)],
  ])('%s', (text, ms) => {
    expect(parseTime(text)).toBe(ms);
  });

  it.each([
    [undefined],
    [null],
    [42],
    [{}],
    [''],
    ['garbage'],
    ['2026-11-29'],
    ['2026-11-29T16:30:06'],
    ['2026-11-29 16:30:06Z'],
    ['2026-11-29t16:30:06z'],
    ['2026-11-29T16:30:06.Z'],
    ['2026-11-29T16:30:06.1234567890Z'],
    ['2026-02-30T00:00:00Z'],
    ['2025-02-29T00:00:00Z'],
    ['2026-13-01T00:00:00Z'],
    ['2026-00-01T00:00:00Z'],
    ['2026-04-31T00:00:00Z'],
    ['2026-11-29T24:00:00Z'],
    ['2026-11-29T16:60:00Z'],
    ['2026-11-29T16:30:60Z'],
    ['2026-11-29T16:30:06+24:00'],
    ['2026-11-29T16:30:06+0200'],
    [' 2026-11-29T16:30:06Z'],
    ['+2026-11-29T16:30:06Z'],
  ])('rejects %j', (text) => {
    expect(parseTime(text)).toBeNull();
  });
});

describe('formatTime', () => {
  it.each([
    [BASE + 123, '2026-11-29T16:30:06.123000000Z', '2026-11-29T16:30:06Z'],
    [BASE, '2026-11-29T16:30:06.000000000Z', '2026-11-29T16:30:06Z'],
    [BASE + 999.5, '2026-11-29T16:30:06.999500000Z', '2026-11-29T16:30:06Z'],
    [
      Date.UTC(1969, 11, 31, 23, 59, 59, 1),
      '1969-12-31T23:59:59.001000000Z',
      '1969-12-31T23:59:59Z',
    ],
  ])('%d', (ms, nano, seconds) => {
    expect(formatTimeNano(ms)).toBe(nano);
    expect(formatTimeSeconds(ms)).toBe(seconds);
  });

  it('parseTime(formatTimeNano(t)) is t for every whole millisecond', () => {
    fc.assert(
      fc.property(fc.integer({ min: -62_135_596_800_000, max: 253_402_300_799_999 }), (ms) => {
        expect(parseTime(formatTimeNano(ms))).toBe(ms);
        expect(parseTime(formatTimeSeconds(ms))).toBe(Math.floor(ms / 1000) * 1000);
      }),
    );
  });
});
