// P9's follow-up ledger (test/harness/storm-ledger.ts): a "follow-up not armed" warning of detect
// is covered by a later "follow-up armed" of the same AG (any AG for a sweep's warning) or a
// "sweep done", within 6 virtual minutes; anything else leaves it uncovered.

import { describe, expect, it } from 'vitest';
import { followUpLedger } from '../../harness/storm-ledger.js';
import type { System } from '../../harness/system.js';
import type { LogRecord } from '../../harness/system/log-capture.js';

const T0 = Date.parse('2026-12-01T10:00:00Z');
const MIN = 60_000;

const rec = (msg: string, atMin: number, ag?: string, fn = 'detect'): LogRecord => ({
  level: msg === 'follow-up not armed' ? 'warn' : 'info',
  function: fn,
  msg,
  virtualAt: T0 + atMin * MIN,
  ...(ag === undefined ? {} : { namespace: 'cozy-system', name: ag }),
});
const systemWith = (records: LogRecord[]): System => ({ logs: { records } }) as unknown as System;

describe('follow-up ledger', () => {
  it.each<[string, LogRecord[], number]>([
    [
      'an arm of the same AG later',
      [rec('follow-up not armed', 0, 'a'), rec('follow-up armed', 1, 'a')],
      0,
    ],
    [
      'only an arm of another AG',
      [rec('follow-up not armed', 0, 'a'), rec('follow-up armed', 1, 'b')],
      1,
    ],
    ['a sweep done within 6 min', [rec('follow-up not armed', 0, 'a'), rec('sweep done', 5.5)], 0],
    [
      'a sweep done only after 6 min',
      [rec('follow-up not armed', 0, 'a'), rec('sweep done', 6.5)],
      1,
    ],
    [
      'an arm before the warning',
      [rec('follow-up armed', 0, 'a'), rec('follow-up not armed', 1, 'a')],
      1,
    ],
    [
      "a sweep's warning, any arm later",
      [rec('follow-up not armed', 0), rec('follow-up armed', 2, 'z')],
      0,
    ],
    [
      'a cover by another function',
      [rec('follow-up not armed', 0, 'a'), rec('sweep done', 1, undefined, 'force-drift')],
      1,
    ],
    ['nothing after it', [rec('follow-up not armed', 0, 'a')], 1],
  ])('%s', (_what, records, uncovered) => {
    const l = followUpLedger(systemWith(records));
    expect(l.notArmed).toBe(1);
    expect(l.uncovered).toBe(uncovered);
    expect(l.uncoveredAt).toHaveLength(uncovered);
  });
});
