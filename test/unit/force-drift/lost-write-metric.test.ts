// The lost write -> first force histogram (docs/adr/0059): force-drift observes, on its deps'
// clock, the seconds from the signalled event's decidedAt (when detect saw the lost write) to the
// first force it wrote; once per stall, never for a repeat force or a force the time rule opened.

import { describe, expect, it } from 'vitest';
import type { ActionData } from '../../../shared/core/objects/cloudevent-types.js';
import {
  LOST_WRITE,
  NO_SIGNALS,
  formatTimeNano,
  type Signals,
} from '../../../shared/core/index.js';
import { noopMetrics, type Metrics } from '../../../shared/runtime/metrics.js';
import { observeLostWriteToForce } from '../../../functions/force-drift/lost-write-metric.js';
import { SettableClock, testConfig } from '../../harness/functions/test-deps.js';
import { SEC, STALL, makeAg } from '../core/fixtures.js';

const config = testConfig();
const SKEW = config.recovery.clockSkewMs;
/** When force-drift writes the force. */
const NOW = STALL + 40 * SEC;

function recording(): { metrics: Metrics; seconds: number[] } {
  const seconds: number[] = [];
  return { seconds, metrics: { ...noopMetrics, lostWriteToForce: (s) => void seconds.push(s) } };
}

const data = (decidedAt: string, attempts = 0): ActionData => ({
  namespace: 'cozy-system',
  name: 'ag',
  resourceVersion: '7',
  attempts,
  decidedAt,
  signal: 'lost-write',
});
const at = (ms: number): string => formatTimeNano(ms);

describe('force-drift: lost write -> first force', () => {
  it.each<[string, { signals: Signals; data: ActionData; attempts?: string }, number[]]>([
    [
      'signalled first force, seen 1.25 s before',
      { signals: LOST_WRITE, data: data(at(NOW - 1250)) },
      [1.25],
    ],
    [
      'signalled first force, seen at this instant',
      { signals: LOST_WRITE, data: data(at(NOW)) },
      [0],
    ],
    [
      'seen 150 s before (a slow redelivery)',
      { signals: LOST_WRITE, data: data(at(NOW - 150 * SEC)) },
      [150],
    ],
    [
      'decidedAt ahead within the skew allowed: 0',
      { signals: LOST_WRITE, data: data(at(NOW + SKEW)) },
      [0],
    ],
    [
      'decidedAt ahead beyond the skew allowed',
      { signals: LOST_WRITE, data: data(at(NOW + SKEW + 1)) },
      [],
    ],
    ['decidedAt unreadable', { signals: LOST_WRITE, data: data('yesterday') }, []],
    [
      'a time-rule force (no verified signal)',
      { signals: NO_SIGNALS, data: data(at(NOW - 1000)) },
      [],
    ],
    [
      'a repeat force: the event asks for attempt 2',
      { signals: LOST_WRITE, data: data(at(NOW - 1000), 1) },
      [],
    ],
    [
      'a stale first-force event: the AG already carries a force',
      { signals: LOST_WRITE, data: data(at(NOW - 1000)), attempts: '1' },
      [],
    ],
  ])('%s', (_label, c, expected) => {
    const { metrics, seconds } = recording();
    const clock = new SettableClock(NOW);
    const ag = makeAg(c.attempts !== undefined ? { attempts: c.attempts, last: NOW - 5000 } : {});
    observeLostWriteToForce(ag, c.signals, c.data, { clock, config, metrics });
    expect(seconds).toEqual(expected);
  });

  it('once per stall: the first force is observed, its redelivery and the repeat forces are not', () => {
    const { metrics, seconds } = recording();
    const clock = new SettableClock(STALL);
    const deps = { clock, config, metrics };
    const first = data(at(STALL));
    clock.advance(800);
    observeLostWriteToForce(makeAg(), LOST_WRITE, first, deps);
    // The same event redelivered after the force was written: the AG carries attempt 1.
    clock.advance(2 * SEC);
    observeLostWriteToForce(makeAg({ attempts: '1', last: STALL + 800 }), LOST_WRITE, first, deps);
    // detect's next force of the same stall (attempt 2), still signalled.
    clock.advance(30 * SEC);
    const next = data(at(clock.now() - 100), 1);
    observeLostWriteToForce(makeAg({ attempts: '1', last: STALL + 800 }), LOST_WRITE, next, deps);
    expect(seconds).toEqual([0.8]);
  });

  it('no metrics in the deps: nothing recorded, nothing thrown', () => {
    const clock = new SettableClock(NOW);
    expect(() =>
      observeLostWriteToForce(makeAg(), LOST_WRITE, data(at(NOW - 1000)), { clock, config }),
    ).not.toThrow();
  });
});
