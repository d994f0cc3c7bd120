// The positions incomplete sweeps keep for their redeliveries (ADR 57): taken once, only while
// young, and at most SWEEP_RESUME_MAX of them.

import { describe, expect, it } from 'vitest';
import {
  createSweepResumes,
  SWEEP_RESUME_MAX,
  SWEEP_RESUME_TTL_MS,
  type SweepPosition,
} from '../../../functions/detect/sweep-resume.js';

const at = (token: string): SweepPosition => ({ continueToken: token, earliest: 42, listed: 2 });

describe('sweep resumes', () => {
  it.each<[string, number, boolean]>([
    ['at once', 0, true],
    ['just inside the TTL', SWEEP_RESUME_TTL_MS - 1, true],
    ['at the TTL: a continue token that old may be compacted', SWEEP_RESUME_TTL_MS, false],
    ['from before the keep (a clock that went back): not trusted', -1, false],
  ])('a position taken %s', (_, afterMs, found) => {
    const resumes = createSweepResumes();
    resumes.keep('ping-1', at('t1'), 1_000);
    expect(resumes.take('ping-1', 1_000 + afterMs)).toEqual(found ? at('t1') : undefined);
  });

  it('is taken once, and only under its own key', () => {
    const resumes = createSweepResumes();
    resumes.keep('ping-1', at('t1'), 0);
    expect(resumes.take('ping-2', 0)).toBeUndefined();
    expect(resumes.take('ping-1', 0)).toEqual(at('t1'));
    expect(resumes.take('ping-1', 0)).toBeUndefined();
    expect(resumes.size()).toBe(0);
  });

  it('a second keep under one key replaces the first', () => {
    const resumes = createSweepResumes();
    resumes.keep('ping-1', at('t1'), 0);
    resumes.keep('ping-1', at('t2'), 10);
    expect(resumes.size()).toBe(1);
    expect(resumes.take('ping-1', 10)).toEqual(at('t2'));
  });

  it(`keeps at most ${SWEEP_RESUME_MAX}: the oldest goes, and expired ones go at the next keep`, () => {
    const resumes = createSweepResumes();
    for (let i = 0; i <= SWEEP_RESUME_MAX; i++) resumes.keep(`ping-${i}`, at(`t${i}`), i);
    expect(resumes.size()).toBe(SWEEP_RESUME_MAX);
    expect(resumes.take('ping-0', SWEEP_RESUME_MAX)).toBeUndefined();
    expect(resumes.take('ping-1', SWEEP_RESUME_MAX)).toEqual(at('t1'));
    resumes.keep('late', at('late'), SWEEP_RESUME_TTL_MS + 100);
    expect(resumes.size()).toBe(1);
  });
});
