import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { formatDuration, parseDuration } from '../../../shared/core/index.js';

describe('parseDuration', () => {
  it.each([
    ['0', 0],
    ['500ms', 500],
    ['30s', 30_000],
    ['4m', 240_000],
    ['1h30m', 5_400_000],
    ['1.5s', 1500],
    ['2m30s', 150_000],
    ['1h2m3s4ms', 3_723_004],
    ['.5s', 500],
    ['1.s', 1000],
    ['1500us', 1.5],
    ['1500µs', 1.5],
    ['2000000ns', 2],
    ['0s', 0],
    ['0.1s', 100],
  ])('%s -> %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    '',
    '30',
    '-30s',
    '+30s',
    ' 30s',
    '30s ',
    '30 s',
    '4x',
    's',
    '.s',
    '1d',
    '1S',
    '3m-1s',
    '1e3s',
    'NaN',
    '9999999999h',
  ])('rejects %j', (text) => {
    expect(() => parseDuration(text)).toThrow(/invalid duration/);
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [500, '500ms'],
    [1.5, '1.5ms'],
    [0.001, '1µs'],
    [30_000, '30s'],
    [60_000, '1m'],
    [90_000, '1m30s'],
    [150_000, '2m30s'],
    [240_000, '4m'],
    [239_000, '3m59s'],
    [1500, '1.5s'],
    [3_600_000, '1h'],
    [5_400_000, '1h30m'],
    [3_723_004, '1h2m3.004s'],
    [-30_000, '-30s'],
  ])('%d ms -> %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('rejects non-finite input', () => {
    expect(() => formatDuration(Number.NaN)).toThrow(RangeError);
  });

  it('round-trips whole milliseconds through parseDuration', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 * 24 * 3_600_000 }), (ms) => {
        expect(parseDuration(formatDuration(ms))).toBe(ms);
      }),
    );
  });
});
