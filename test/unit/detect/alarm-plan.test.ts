import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  ALARM_MARGIN_MS,
  alarmMoment,
  cronFor,
  planEnsure,
  planSettle,
} from '../../../shared/core/follow-up/alarm.js';

const T = (iso: string): number => Date.parse(iso);
/** The plans planEnsure and planSettle return. */
const set = (moment: number) => ({ kind: 'set', moment }) as const;
const KEEP = { kind: 'keep' } as const;
const DELETE = { kind: 'delete' } as const;

describe('alarmMoment', () => {
  it.each([
    [
      'a due time far ahead rounds up to the next whole second',
      '2026-03-01T10:00:00.000Z',
      '2026-03-01T10:00:30.250Z',
      '2026-03-01T10:00:31.000Z',
    ],
    [
      'a due time on a whole second stays',
      '2026-03-01T10:00:00.000Z',
      '2026-03-01T10:00:30.000Z',
      '2026-03-01T10:00:30.000Z',
    ],
    [
      'a due time inside the margin moves to now + margin',
      '2026-03-01T10:00:00.400Z',
      '2026-03-01T10:00:01.000Z',
      '2026-03-01T10:00:03.000Z',
    ],
    [
      'a due time in the past moves to now + margin',
      '2026-03-01T10:00:00.000Z',
      '2026-03-01T09:00:00.000Z',
      '2026-03-01T10:00:02.000Z',
    ],
  ])('%s', (_name, now, due, expected) => {
    expect(new Date(alarmMoment(T(due), T(now))).toISOString()).toBe(expected);
  });

  it('is never earlier than the due time nor later than due + 1 s when the due time is beyond the margin', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4e12 }),
        fc.integer({ min: ALARM_MARGIN_MS, max: 1e9 }),
        (now, ahead) => {
          const m = alarmMoment(now + ahead, now);
          return m >= now + ahead && m - (now + ahead) < 1000 && m % 1000 === 0;
        },
      ),
    );
  });
});

describe('cronFor', () => {
  it.each([
    ['grace expiry within a minute', '2026-03-01T10:00:31.000Z', '31 0 10 1 3 *'],
    ['minute rollover', '2026-03-01T10:59:59.000Z', '59 59 10 1 3 *'],
    ['hour rollover', '2026-03-01T11:00:00.000Z', '0 0 11 1 3 *'],
    ['day rollover', '2026-03-02T00:00:01.000Z', '1 0 0 2 3 *'],
    ['month end (leap year February)', '2028-02-29T23:59:30.000Z', '30 59 23 29 2 *'],
    ['year rollover', '2027-01-01T00:00:04.000Z', '4 0 0 1 1 *'],
  ])('%s', (_name, moment, cron) => {
    expect(cronFor(T(moment))).toBe(cron);
  });

  it('round-trips through the cron fields to the same UTC moment within the year', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4e9 }), (seconds) => {
        const moment = T('2026-01-01T00:00:00Z') + seconds * 1000;
        const [s, m, h, d, mon, dow] = cronFor(moment).split(' ');
        const year = new Date(moment).getUTCFullYear();
        return (
          dow === '*' &&
          Date.UTC(year, Number(mon) - 1, Number(d), Number(h), Number(m), Number(s)) === moment
        );
      }),
    );
  });
});

describe('planEnsure', () => {
  const now = T('2026-03-01T10:00:00Z');
  it.each([
    ['no alarm: set', null, now + 30_000, set(now + 30_000)],
    ['an earlier future alarm: keep', now + 10_000, now + 30_000, KEEP],
    ['the same moment: keep', now + 30_000, now + 30_000, KEEP],
    ['a later future alarm: move it earlier', now + 60_000, now + 30_000, set(now + 30_000)],
    ['a past (fired) alarm: set', now - 1000, now + 30_000, set(now + 30_000)],
  ] as const)('%s', (_name, armed, due, expected) => {
    expect(planEnsure(armed, due, now)).toEqual(expected);
  });
});

describe('planSettle', () => {
  const now = T('2026-03-01T10:00:00Z');
  it.each([
    ['nothing due, no alarm: keep', false, null, null, KEEP],
    ['nothing due, fired alarm: delete', true, now - 500, null, DELETE],
    ['nothing due, alarm with a garbled moment: delete', true, null, null, DELETE],
    ['nothing due, future alarm (armed concurrently): keep', true, now + 20_000, null, KEEP],
    ['due later, fired alarm: set exactly', true, now - 500, now + 90_000, set(now + 90_000)],
    ['due later, no alarm: set', false, null, now + 90_000, set(now + 90_000)],
    [
      'due earlier than a future alarm: move earlier',
      true,
      now + 120_000,
      now + 90_000,
      set(now + 90_000),
    ],
    [
      'due later than a future alarm: keep (never moved later while pending)',
      true,
      now + 60_000,
      now + 90_000,
      KEEP,
    ],
  ] as const)('%s', (_name, exists, armed, earliest, expected) => {
    expect(planSettle(armed, exists, earliest, now)).toEqual(expected);
  });

  it('never leaves a future alarm later than the earliest due time (any interleaving of plans)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e6 }),
        fc.array(fc.integer({ min: 3000, max: 600_000 }), { minLength: 1, maxLength: 20 }),
        (now0, dues) => {
          let armed: number | null = null;
          const t = T('2026-03-01T10:00:00Z') + now0;
          for (const d of dues) {
            const plan = planEnsure(armed, t + d, t);
            if (plan.kind === 'set') armed = plan.moment;
          }
          const earliest = Math.min(...dues.map((d) => alarmMoment(t + d, t)));
          return armed === earliest;
        },
      ),
    );
  });
});
