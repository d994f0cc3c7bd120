import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { backoffFor, DEFAULT_RECOVERY_CONFIG as CFG } from '../../../shared/core/index.js';

describe('backoffFor', () => {
  it.each([
    [0, 30_000],
    [1, 30_000],
    [2, 60_000],
    [3, 120_000],
    [4, 240_000],
    [5, 240_000],
    [10, 240_000],
    [-3, 30_000],
    [Number.NaN, 30_000],
    [1_000_000_000, 240_000],
    [Number.MAX_SAFE_INTEGER, 240_000],
    [Infinity, 240_000],
  ])('attempts %d -> %d ms', (attempts, ms) => {
    expect(backoffFor(attempts, CFG)).toBe(ms);
  });

  it('doubles from the configured initial value up to the cap', () => {
    const cfg = { backoffInitialMs: 1000, backoffMaxMs: 10_000 };
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffFor(n, cfg))).toEqual([
      1000, 2000, 4000, 8000, 10_000, 10_000,
    ]);
  });

  it('stays within [initial, max] and never decreases', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3_600_000 }),
        fc.integer({ min: 0, max: 3_600_000 }),
        fc.integer({ min: 0, max: 5000 }),
        (initial, extra, n) => {
          const cfg = { backoffInitialMs: initial, backoffMaxMs: initial + extra };
          const a = backoffFor(n, cfg);
          const b = backoffFor(n + 1, cfg);
          expect(a).toBeGreaterThanOrEqual(initial);
          expect(a).toBeLessThanOrEqual(initial + extra);
          expect(b).toBeGreaterThanOrEqual(a);
        },
      ),
    );
  });
});
