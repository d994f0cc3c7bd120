import { describe, expect, it } from 'vitest';
import {
  findCondition,
  readyOf,
  replaceCondition,
  sameCondition,
  type Condition,
} from '../../../shared/core/index.js';
import { makeAg, STALL } from './fixtures.js';
import { progressing, reconciling, succeeded } from '../../support/conditions.js';

describe('findCondition', () => {
  it.each<[string, unknown, Condition | undefined]>([
    ['undefined', undefined, undefined],
    ['not an array', { type: 'Ready' }, undefined],
    ['junk entries', [null, 3, 'Ready', ['Ready']], undefined],
    ['other types only', [{ type: 'Reconciling', status: 'True' }], undefined],
    ['match', [{ type: 'Ready', status: 'True' }], { type: 'Ready', status: 'True' }],
    [
      'first of duplicates',
      [
        { type: 'Ready', status: 'False' },
        { type: 'Ready', status: 'True' },
      ],
      { type: 'Ready', status: 'False' },
    ],
    [
      'wrong-typed fields dropped',
      [{ type: 'Ready', status: 1, reason: 'R', observedGeneration: '2', message: null }],
      { type: 'Ready', reason: 'R' },
    ],
  ])('%s', (_label, conditions, expected) => {
    expect(findCondition(conditions, 'Ready')).toEqual(expected);
  });

  it('readyOf reads the AG status', () => {
    expect(readyOf(makeAg())).toEqual(progressing(STALL));
    expect(readyOf({})).toBeUndefined();
  });
});

describe('replaceCondition', () => {
  const other: Condition = { type: 'Other', status: 'True', reason: 'X' };
  const kept = reconciling(STALL);
  const next = succeeded(STALL + 1000);

  it.each<[string, Condition[] | undefined, Condition[]]>([
    ['undefined list', undefined, [next]],
    ['empty list', [], [next]],
    ['appends when absent', [kept, other], [kept, other, next]],
    ['replaces in place', [kept, progressing(STALL), other], [kept, next, other]],
    ['drops later duplicates', [progressing(STALL), other, progressing(STALL)], [next, other]],
  ])('%s', (_label, list, expected) => {
    const before = structuredClone(list);
    expect(replaceCondition(list, next)).toEqual(expected);
    expect(list).toEqual(before);
  });

  it('keeps the other entries as the very same objects', () => {
    const list = [kept, progressing(STALL), other];
    const out = replaceCondition(list, next);
    expect(out[0]).toBe(kept);
    expect(out[2]).toBe(other);
    expect(out).not.toBe(list);
  });
});

describe('sameCondition', () => {
  const base = succeeded(STALL);
  const { observedGeneration: _generation, ...withoutGeneration } = base;
  it.each<[string, Condition | undefined, Condition | undefined, boolean]>([
    ['both missing', undefined, undefined, true],
    ['one missing', base, undefined, false],
    ['equal copies', base, { ...base }, true],
    ['status differs', base, { ...base, status: 'False' }, false],
    ['reason differs', base, { ...base, reason: 'Other' }, false],
    ['message differs', base, { ...base, message: 'm' }, false],
    ['time differs', base, { ...base, lastTransitionTime: '2020-01-01T00:00:00Z' }, false],
    ['generation differs', base, { ...base, observedGeneration: 9 }, false],
    ['generation missing on one', base, withoutGeneration, false],
  ])('%s -> %s', (_label, a, b, same) => {
    expect(sameCondition(a, b)).toBe(same);
  });
});
