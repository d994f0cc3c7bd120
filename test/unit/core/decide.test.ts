import { describe, expect, it } from 'vitest';
import {
  decide,
  formatTimeNano,
  RESUME_SETTLE_MS,
  type ArtifactGenerator,
  type Decision,
} from '../../../shared/core/index.js';
import {
  force,
  giveUp,
  healthy,
  healthyAskingHistory,
  healthyClear,
  ignore,
  resume,
  wait,
} from './decisions.js';
import { CFG, cfgWith, makeAg, MIN, SEC, STALL } from './fixtures.js';
import { buildFailed, marker, progressing, succeeded } from '../../support/conditions.js';

const NOW = STALL + 20 * MIN;

describe('decide: objects left alone', () => {
  it.each<[string, ArtifactGenerator, Decision]>([
    ['being deleted', makeAg({ deleting: true }), ignore('deleting')],
    ['no name', { ...makeAg(), metadata: { namespace: 'cozy-system' } }, ignore('invalid')],
    ['no namespace', { ...makeAg(), metadata: { name: 'x' } }, ignore('invalid')],
    ['no metadata', {}, ignore('invalid')],
  ])('%s', (_label, ag, decision) => {
    expect(decide(ag, NOW, CFG)).toEqual(decision);
  });
});

describe('decide: reset only on an honest Ready', () => {
  it.each<[string, ArtifactGenerator, Decision]>([
    [
      'Ready True with tracking -> clear',
      makeAg({ ready: succeeded(NOW - MIN), attempts: '3', last: NOW - 2 * MIN }),
      healthyClear,
    ],
    [
      'upstream False with tracking -> clear',
      makeAg({ ready: buildFailed(NOW - MIN), attempts: '2', last: NOW - 2 * MIN }),
      healthyClear,
    ],
    [
      'young upstream False with tracking (inside the first backoff) -> keep the count',
      makeAg({ ready: buildFailed(NOW - 10 * SEC), attempts: '3', last: NOW - MIN }),
      healthy,
    ],
    [
      'upstream False exactly one backoff old -> clear',
      makeAg({ ready: buildFailed(NOW - 30 * SEC), attempts: '3', last: NOW - MIN }),
      healthyClear,
    ],
    [
      'upstream False with an unreadable time -> clear at once',
      makeAg({
        ready: { ...buildFailed(NOW), lastTransitionTime: 'yesterday' },
        attempts: '3',
        last: NOW - MIN,
      }),
      healthyClear,
    ],
    [
      'upstream False stamped beyond the clock-skew allowance -> clear at once',
      makeAg({ ready: buildFailed(NOW + 2 * MIN), attempts: '3', last: NOW - MIN }),
      healthyClear,
    ],
    [
      'Ready True, junk tracking -> clear',
      makeAg({ ready: succeeded(NOW - MIN), attempts: 'junk' }),
      healthyClear,
    ],
    [
      'Ready True without tracking -> nothing to clear',
      makeAg({ ready: succeeded(NOW - MIN) }),
      healthy,
    ],
    [
      'Unknown within grace, no tracking',
      makeAg({ ready: progressing(NOW - 5 * SEC) }),
      healthyAskingHistory,
    ],
    [
      'Unknown with attempts > 0 is NOT a reset',
      makeAg({
        ready: progressing(NOW - 5 * SEC),
        attempts: '2',
        last: NOW - 20 * SEC,
        requestedAt: NOW - 20 * SEC,
      }),
      wait(2, NOW + 40 * SEC, 'rebuilding'),
    ],
    [
      'a fresh lastTransitionTime never resets',
      makeAg({
        ready: progressing(NOW),
        attempts: '4',
        last: NOW - 4 * MIN,
        requestedAt: NOW - 4 * MIN,
      }),
      force(5, 'rebuilding'),
    ],
  ])('%s', (_label, ag, decision) => {
    expect(decide(ag, NOW, CFG)).toEqual(decision);
  });
});

describe('decide: the recovery timeline', () => {
  const forced = (attempts: number, last: number, ready = marker(last)): ArtifactGenerator =>
    makeAg({ ready, attempts: String(attempts), last, requestedAt: last });

  it.each<[string, ArtifactGenerator, number, Decision]>([
    ['grace not over', makeAg(), STALL + 30 * SEC, healthyAskingHistory],
    ['first force just past grace', makeAg(), STALL + 30 * SEC + 1, force(1, 'stuck')],
    [
      'own marker inside backoff 1',
      forced(1, NOW - 10 * SEC),
      NOW,
      wait(1, NOW + 20 * SEC, 'own-marker'),
    ],
    ['stale own marker after backoff 1', forced(1, NOW - 30 * SEC), NOW, force(2, 'own-marker')],
    ['3 attempts at 30 s', forced(3, NOW - 30 * SEC), NOW, wait(3, NOW + 90 * SEC, 'own-marker')],
    [
      'final window: 5 attempts at 3m59s',
      forced(5, NOW - 239 * SEC),
      NOW,
      wait(5, NOW + SEC, 'own-marker'),
    ],
    [
      'final window closed: 5 attempts at 4m',
      forced(5, NOW - 4 * MIN),
      NOW,
      giveUp(5, 'own-marker'),
    ],
    [
      'final window with source-watcher Progressing',
      forced(5, NOW - 239 * SEC, progressing(NOW - 200 * SEC)),
      NOW,
      wait(5, NOW + SEC, 'rebuilding'),
    ],
    [
      'give-up with source-watcher Progressing',
      forced(5, NOW - 4 * MIN, progressing(NOW - 200 * SEC)),
      NOW,
      giveUp(5, 'rebuilding'),
    ],
    [
      'malformed last time with 5 attempts',
      makeAg({ ready: marker(STALL), attempts: '5', last: 'garbage' }),
      NOW,
      giveUp(5, 'own-marker'),
    ],
    [
      'last 10 min in the future is malformed (long ago)',
      makeAg({ ready: marker(STALL), attempts: '2', last: NOW + 10 * MIN }),
      NOW,
      force(3, 'own-marker'),
    ],
    [
      'last 30 s in the future is kept (clamped)',
      forced(2, NOW + 30 * SEC),
      NOW,
      wait(2, NOW + MIN, 'own-marker'),
    ],
  ])('%s', (_label, ag, now, decision) => {
    expect(decide(ag, now, CFG)).toEqual(decision);
  });
});

describe('decide: resume a claimed but unfinished force', () => {
  const last = NOW - RESUME_SETTLE_MS;
  /** Claimed `attempts` at `last`, our marker in place. */
  const claimed = (attempts: number, rest: { requestedAt?: string | number } = {}) =>
    makeAg({ ready: marker(last), attempts: String(attempts), last, ...rest });
  it.each<[string, ArtifactGenerator, number, Decision]>([
    ['requestedAt missing after the settle time', claimed(2), NOW, resume(2, 'own-marker')],
    [
      'requestedAt older than the claim',
      claimed(2, { requestedAt: last - MIN }),
      NOW,
      resume(2, 'own-marker'),
    ],
    [
      'marker write lost too (Progressing, attempts > 0)',
      makeAg({ ready: progressing(STALL), attempts: '1', last }),
      NOW,
      resume(1, 'rebuilding'),
    ],
    [
      'claim on a stuck AG whose marker write failed',
      makeAg({ attempts: '1', last, requestedAt: 'junk' }),
      NOW,
      resume(1, 'rebuilding'),
    ],
    [
      'requestedAt equal to the claim (same instant, other format)',
      claimed(2, { requestedAt: new Date(last).toISOString() }),
      NOW,
      wait(2, last + MIN, 'own-marker'),
    ],
    [
      'finished force: requestedAt == last-recovery-at',
      claimed(2, { requestedAt: formatTimeNano(last) }),
      NOW,
      wait(2, last + MIN, 'own-marker'),
    ],
    ['within the settle time: wait', claimed(2), NOW - 1, wait(2, last + MIN, 'own-marker')],
    ['backoff over: a new force, not a resume', claimed(2), last + MIN, force(3, 'own-marker')],
    ['final window: resume the last force', claimed(5), NOW, resume(5, 'own-marker')],
    [
      'after the final window: give-up, not resume',
      claimed(5),
      last + 4 * MIN,
      giveUp(5, 'own-marker'),
    ],
  ])('%s', (_label, ag, now, decision) => {
    expect(decide(ag, now, CFG)).toEqual(decision);
  });
});

describe('decide: modes', () => {
  const stuck = makeAg({ attempts: '1', last: NOW - 2 * MIN, requestedAt: NOW - 2 * MIN });
  it.each<[string, ArtifactGenerator, Decision, Decision]>([
    ['stuck', stuck, force(2, 'rebuilding'), healthy],
    [
      'healthy with tracking',
      makeAg({ ready: succeeded(NOW), attempts: '1' }),
      healthyClear,
      healthy,
    ],
    ['left-over marker', makeAg({ ready: marker(STALL) }), force(1, 'own-marker'), healthy],
  ])('%s: observe decides like enforce; off only copies through', (_label, ag, enforced, off) => {
    expect(decide(ag, NOW, CFG)).toEqual(enforced);
    expect(decide(ag, NOW, cfgWith({ mode: 'observe' }))).toEqual(enforced);
    expect(decide(ag, NOW, cfgWith({ mode: 'off' }))).toEqual(off);
  });

  it('off still ignores AGs being deleted', () => {
    expect(decide(makeAg({ deleting: true }), NOW, cfgWith({ mode: 'off' }))).toEqual(
      ignore('deleting'),
    );
  });
});
