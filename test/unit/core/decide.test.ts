import { describe, expect, it } from 'vitest';
import {
  decide,
  formatTimeNano,
  RESUME_SETTLE_MS,
  type ArtifactGenerator,
  type Decision,
} from '../../../shared/core/index.js';
import { CFG, cfgWith, makeAg, MIN, SEC, STALL } from './fixtures.js';
import { buildFailed, marker, progressing, succeeded } from './ready-conditions.js';

const NOW = STALL + 20 * MIN;

describe('decide: objects left alone', () => {
  it.each<[string, ArtifactGenerator, Decision]>([
    ['being deleted', makeAg({ deleting: true }), { kind: 'ignore', why: 'deleting' }],
    [
      'no name',
      { ...makeAg(), metadata: { namespace: 'cozy-system' } },
      { kind: 'ignore', why: 'invalid' },
    ],
    ['no namespace', { ...makeAg(), metadata: { name: 'x' } }, { kind: 'ignore', why: 'invalid' }],
    ['no metadata', {}, { kind: 'ignore', why: 'invalid' }],
  ])('%s', (_label, ag, decision) => {
    expect(decide(ag, NOW, CFG)).toEqual(decision);
  });
});

describe('decide: reset only on an honest Ready', () => {
  it.each<[string, ArtifactGenerator, Decision]>([
    [
      'Ready True with tracking -> clear',
      makeAg({ ready: succeeded(NOW - MIN), attempts: '3', last: NOW - 2 * MIN }),
      { kind: 'healthy', clearTracking: true },
    ],
    [
      'upstream False with tracking -> clear',
      makeAg({ ready: buildFailed(NOW - MIN), attempts: '2', last: NOW - 2 * MIN }),
      { kind: 'healthy', clearTracking: true },
    ],
    [
      'young upstream False with tracking (inside the first backoff) -> keep the count',
      makeAg({ ready: buildFailed(NOW - 10 * SEC), attempts: '3', last: NOW - MIN }),
      { kind: 'healthy', clearTracking: false },
    ],
    [
      'upstream False exactly one backoff old -> clear',
      makeAg({ ready: buildFailed(NOW - 30 * SEC), attempts: '3', last: NOW - MIN }),
      { kind: 'healthy', clearTracking: true },
    ],
    [
      'upstream False with an unreadable time -> clear at once',
      makeAg({
        ready: { ...buildFailed(NOW), lastTransitionTime: 'yesterday' },
        attempts: '3',
        last: NOW - MIN,
      }),
      { kind: 'healthy', clearTracking: true },
    ],
    [
      'upstream False stamped beyond the clock-skew allowance -> clear at once',
      makeAg({ ready: buildFailed(NOW + 2 * MIN), attempts: '3', last: NOW - MIN }),
      { kind: 'healthy', clearTracking: true },
    ],
    [
      'Ready True, junk tracking -> clear',
      makeAg({ ready: succeeded(NOW - MIN), attempts: 'junk' }),
      { kind: 'healthy', clearTracking: true },
    ],
    [
      'Ready True without tracking -> nothing to clear',
      makeAg({ ready: succeeded(NOW - MIN) }),
      { kind: 'healthy', clearTracking: false },
    ],
    [
      'Unknown within grace, no tracking',
      makeAg({ ready: progressing(NOW - 5 * SEC) }),
      { kind: 'healthy', clearTracking: false },
    ],
    [
      'Unknown with attempts > 0 is NOT a reset',
      makeAg({
        ready: progressing(NOW - 5 * SEC),
        attempts: '2',
        last: NOW - 20 * SEC,
        requestedAt: NOW - 20 * SEC,
      }),
      { kind: 'wait', attempts: 2, until: NOW + 40 * SEC, gate: 'rebuilding' },
    ],
    [
      'a fresh lastTransitionTime never resets',
      makeAg({
        ready: progressing(NOW),
        attempts: '4',
        last: NOW - 4 * MIN,
        requestedAt: NOW - 4 * MIN,
      }),
      { kind: 'force', attempt: 5, gate: 'rebuilding' },
    ],
  ])('%s', (_label, ag, decision) => {
    expect(decide(ag, NOW, CFG)).toEqual(decision);
  });
});

describe('decide: the recovery timeline', () => {
  const forced = (attempts: number, last: number, ready = marker(last)): ArtifactGenerator =>
    makeAg({ ready, attempts: String(attempts), last, requestedAt: last });

  it.each<[string, ArtifactGenerator, number, Decision]>([
    ['grace not over', makeAg(), STALL + 30 * SEC, { kind: 'healthy', clearTracking: false }],
    [
      'first force just past grace',
      makeAg(),
      STALL + 30 * SEC + 1,
      { kind: 'force', attempt: 1, gate: 'stuck' },
    ],
    [
      'own marker inside backoff 1',
      forced(1, NOW - 10 * SEC),
      NOW,
      { kind: 'wait', attempts: 1, until: NOW + 20 * SEC, gate: 'own-marker' },
    ],
    [
      'stale own marker after backoff 1',
      forced(1, NOW - 30 * SEC),
      NOW,
      { kind: 'force', attempt: 2, gate: 'own-marker' },
    ],
    [
      '3 attempts at 30 s',
      forced(3, NOW - 30 * SEC),
      NOW,
      { kind: 'wait', attempts: 3, until: NOW + 90 * SEC, gate: 'own-marker' },
    ],
    [
      'final window: 5 attempts at 3m59s',
      forced(5, NOW - 239 * SEC),
      NOW,
      { kind: 'wait', attempts: 5, until: NOW + SEC, gate: 'own-marker' },
    ],
    [
      'final window closed: 5 attempts at 4m',
      forced(5, NOW - 4 * MIN),
      NOW,
      { kind: 'give-up', attempts: 5, gate: 'own-marker' },
    ],
    [
      'final window with source-watcher Progressing',
      forced(5, NOW - 239 * SEC, progressing(NOW - 200 * SEC)),
      NOW,
      { kind: 'wait', attempts: 5, until: NOW + SEC, gate: 'rebuilding' },
    ],
    [
      'give-up with source-watcher Progressing',
      forced(5, NOW - 4 * MIN, progressing(NOW - 200 * SEC)),
      NOW,
      { kind: 'give-up', attempts: 5, gate: 'rebuilding' },
    ],
    [
      'malformed last time with 5 attempts',
      makeAg({ ready: marker(STALL), attempts: '5', last: 'garbage' }),
      NOW,
      { kind: 'give-up', attempts: 5, gate: 'own-marker' },
    ],
    [
      'last 10 min in the future is malformed (long ago)',
      makeAg({ ready: marker(STALL), attempts: '2', last: NOW + 10 * MIN }),
      NOW,
      { kind: 'force', attempt: 3, gate: 'own-marker' },
    ],
    [
      'last 30 s in the future is kept (clamped)',
      forced(2, NOW + 30 * SEC),
      NOW,
      { kind: 'wait', attempts: 2, until: NOW + MIN, gate: 'own-marker' },
    ],
  ])('%s', (_label, ag, now, decision) => {
    expect(decide(ag, now, CFG)).toEqual(decision);
  });
});

describe('decide: resume a claimed but unfinished force', () => {
  const last = NOW - RESUME_SETTLE_MS;
  it.each<[string, ArtifactGenerator, number, Decision]>([
    [
      'requestedAt missing after the settle time',
      makeAg({ ready: marker(last), attempts: '2', last }),
      NOW,
      { kind: 'resume', attempt: 2, gate: 'own-marker' },
    ],
    [
      'requestedAt older than the claim',
      makeAg({ ready: marker(last), attempts: '2', last, requestedAt: last - MIN }),
      NOW,
      { kind: 'resume', attempt: 2, gate: 'own-marker' },
    ],
    [
      'marker write lost too (Progressing, attempts > 0)',
      makeAg({ ready: progressing(STALL), attempts: '1', last }),
      NOW,
      { kind: 'resume', attempt: 1, gate: 'rebuilding' },
    ],
    [
      'claim on a stuck AG whose marker write failed',
      makeAg({ attempts: '1', last, requestedAt: 'junk' }),
      NOW,
      { kind: 'resume', attempt: 1, gate: 'rebuilding' },
    ],
    [
      'requestedAt equal to the claim (same instant, other format)',
      makeAg({
        ready: marker(last),
        attempts: '2',
        last,
        requestedAt: new Date(last).toISOString(),
      }),
      NOW,
      { kind: 'wait', attempts: 2, until: last + MIN, gate: 'own-marker' },
    ],
    [
      'finished force: requestedAt == last-recovery-at',
      makeAg({ ready: marker(last), attempts: '2', last, requestedAt: formatTimeNano(last) }),
      NOW,
      { kind: 'wait', attempts: 2, until: last + MIN, gate: 'own-marker' },
    ],
    [
      'within the settle time: wait',
      makeAg({ ready: marker(last), attempts: '2', last }),
      NOW - 1,
      { kind: 'wait', attempts: 2, until: last + MIN, gate: 'own-marker' },
    ],
    [
      'backoff over: a new force, not a resume',
      makeAg({ ready: marker(last), attempts: '2', last }),
      last + MIN,
      { kind: 'force', attempt: 3, gate: 'own-marker' },
    ],
    [
      'final window: resume the last force',
      makeAg({ ready: marker(last), attempts: '5', last }),
      NOW,
      { kind: 'resume', attempt: 5, gate: 'own-marker' },
    ],
    [
      'after the final window: give-up, not resume',
      makeAg({ ready: marker(last), attempts: '5', last }),
      last + 4 * MIN,
      { kind: 'give-up', attempts: 5, gate: 'own-marker' },
    ],
  ])('%s', (_label, ag, now, decision) => {
    expect(decide(ag, now, CFG)).toEqual(decision);
  });
});

describe('decide: modes', () => {
  const stuck = makeAg({ attempts: '1', last: NOW - 2 * MIN, requestedAt: NOW - 2 * MIN });
  it.each<[string, ArtifactGenerator, Decision, Decision]>([
    [
      'stuck',
      stuck,
      { kind: 'force', attempt: 2, gate: 'rebuilding' },
      { kind: 'healthy', clearTracking: false },
    ],
    [
      'healthy with tracking',
      makeAg({ ready: succeeded(NOW), attempts: '1' }),
      { kind: 'healthy', clearTracking: true },
      { kind: 'healthy', clearTracking: false },
    ],
    [
      'left-over marker',
      makeAg({ ready: marker(STALL) }),
      { kind: 'force', attempt: 1, gate: 'own-marker' },
      { kind: 'healthy', clearTracking: false },
    ],
  ])('%s: observe decides like enforce; off only copies through', (_label, ag, enforced, off) => {
    expect(decide(ag, NOW, CFG)).toEqual(enforced);
    expect(decide(ag, NOW, cfgWith({ mode: 'observe' }))).toEqual(enforced);
    expect(decide(ag, NOW, cfgWith({ mode: 'off' }))).toEqual(off);
  });

  it('off still ignores AGs being deleted', () => {
    expect(decide(makeAg({ deleting: true }), NOW, cfgWith({ mode: 'off' }))).toEqual({
      kind: 'ignore',
      why: 'deleting',
    });
  });
});
