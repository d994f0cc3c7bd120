import { describe, expect, it } from 'vitest';
import { compareResourceVersions, resourceVersionAtLeast } from '../../../shared/core/index.js';

describe('resource versions compared as etcd revisions', () => {
  it.each<[unknown, unknown, -1 | 0 | 1 | null, boolean]>([
    ['100', '100', 0, true],
    ['101', '100', 1, true],
    ['99', '100', -1, false],
    ['9', '10', -1, false], // numbers, not strings
    ['123456789012345678901234567890', '123456789012345678901234567889', 1, true],
    ['', '100', null, false],
    ['abc', '100', null, false],
    ['100', '1e3', null, false],
    ['-1', '100', null, false],
    ['1234567890123456789012345678901', '1', null, false], // longer than any revision
    [undefined, '100', null, false],
    ['100', 100, null, false],
  ])('%j vs %j', (a, b, cmp, atLeast) => {
    expect(compareResourceVersions(a, b)).toBe(cmp);
    expect(resourceVersionAtLeast(a, b)).toBe(atLeast);
  });
});
