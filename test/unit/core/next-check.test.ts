import { describe, expect, it } from 'vitest';
import {
  formatTimeNano,
  nextCheckAt,
  type ArtifactGenerator,
  type RecoveryConfig,
} from '../../../shared/core/index.js';
import { CFG, cfgWith, claimedAg, makeAg, MIN, SEC, STALL } from './fixtures.js';
import { buildFailed, progressing, succeeded } from '../../support/conditions.js';

const forced = (attempts: number, last: number): ArtifactGenerator =>
  claimedAg(attempts, last, { requestedAt: formatTimeNano(last) });

describe('nextCheckAt', () => {
  const T = STALL + 20 * MIN;
  it.each<[string, ArtifactGenerator, number, number | null, RecoveryConfig?]>([
    ['grace running: 1 ms after it ends', makeAg(), STALL + 10 * SEC, STALL + 30 * SEC + 1],
    [
      'grace running from creation (Ready missing)',
      makeAg({ ready: null, created: STALL }),
      STALL + 10 * SEC,
      STALL + 30 * SEC + 1,
    ],
    ['grace running, exactly at its end', makeAg(), STALL + 30 * SEC, STALL + 30 * SEC + 1],
    ['no outputs yet: nothing to follow', makeAg({ inventory: false }), STALL + 10 * SEC, null],
    [
      'Unknown on an older generation: source-watcher will act',
      makeAg({ generation: 2, ready: progressing(STALL, 1) }),
      STALL + 10 * SEC,
      null,
    ],
    [
      'young honest failure with tracking: when it has stayed one backoff',
      makeAg({ ready: buildFailed(T - 10 * SEC), attempts: '3', last: T - MIN }),
      T,
      T + 20 * SEC,
    ],
    [
      'honest failure that stayed: nothing pending once cleared',
      makeAg({ ready: buildFailed(T - MIN) }),
      T,
      null,
    ],
    ['stuck: force now', makeAg(), STALL + MIN, STALL + MIN],
    ['backoff 1', forced(1, T - 10 * SEC), T, T + 20 * SEC],
    ['backoff 2', forced(2, T - 10 * SEC), T, T + 50 * SEC],
    ['backoff 3', forced(3, T - 10 * SEC), T, T + 110 * SEC],
    ['backoff 4', forced(4, T - 10 * SEC), T, T + 230 * SEC],
    ['final window', forced(5, T - 10 * SEC), T, T + 230 * SEC],
    ['final window closed: give-up, nothing pending', forced(5, T - 4 * MIN), T, null],
    ['unfinished force: the resume moment first', claimedAg(2, T - 2 * SEC), T, T + 8 * SEC],
    ['unfinished force, settle over: resume now', claimedAg(2, T - 20 * SEC), T, T],
    [
      'unfinished force, window ends before the settle time: the window first',
      claimedAg(1, T - 3 * SEC, { requestedAt: 'x' }),
      T,
      T + 2 * SEC,
      cfgWith({ backoffInitialMs: 5 * SEC }),
    ],
    ['healthy True: nothing', makeAg({ ready: succeeded(T) }), T, null],
    ['upstream False: nothing', makeAg({ ready: buildFailed(T) }), T, null],
    ['deleting: nothing', makeAg({ deleting: true }), T, null],
    ['invalid: nothing', {}, T, null],
    ['mode off: nothing', makeAg(), STALL + 10 * SEC, null, cfgWith({ mode: 'off' })],
    [
      'observe: same as enforce',
      forced(1, T - 10 * SEC),
      T,
      T + 20 * SEC,
      cfgWith({ mode: 'observe' }),
    ],
  ])('%s', (_label, ag, now, expected, cfg = CFG) => {
    expect(nextCheckAt(ag, now, cfg)).toBe(expected);
  });
});
