import { describe, expect, it } from 'vitest';
import { CronError, nextFire, parseSchedule } from '../../harness/knative/cron.js';

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** [name, schedule, after, the next fire (null: never), time zone?] */
type Case = [name: string, schedule: string, after: string, want: string | null, tz?: string];
const cases: Case[] = [
  // The one-line rows, then the longer ones; each part in the order: rollovers of each field, the
  // seconds field, steps, ranges, lists and names, descriptors and time zones.
  ['every minute', '* * * * *', '2026-01-01T00:00:00Z', '2026-01-01T00:01:00Z'],
  ['minute rolls into the next hour', '5 * * * *', '2026-01-01T10:06:00Z', '2026-01-01T11:05:00Z'],
  ['hour rolls into the next day', '30 2 * * *', '2026-01-01T02:30:00Z', '2026-01-02T02:30:00Z'],
  ['day rolls into the next month', '0 0 1 * *', '2026-01-15T00:00:00Z', '2026-02-01T00:00:00Z'],
  ['31st skips short months', '0 0 31 * *', '2026-03-31T00:00:00Z', '2026-05-31T00:00:00Z'],
  ['month rolls into the next year', '0 0 1 1 *', '2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z'],
  ['year end to new year', '0 0 * * *', '2026-12-31T23:59:59Z', '2027-01-01T00:00:00Z'],
  ['leap day waits for a leap year', '0 0 29 2 *', '2026-03-01T00:00:00Z', '2028-02-29T00:00:00Z'],
  ['an impossible date never fires', '0 0 30 2 *', '2026-01-01T00:00:00Z', null],
  ['seconds field', '15 * * * * *', '2026-01-01T00:00:15Z', '2026-01-01T00:01:15Z'],
  ['seconds: fully pinned moment', '7 8 9 10 11 *', '2026-01-01T00:00:00Z', '2026-11-10T09:08:07Z'],
  ['seconds: every 10 s', '*/10 * * * * *', '2026-01-01T00:00:51Z', '2026-01-01T00:01:00Z'],
  ['step */5 minutes', '*/5 * * * *', '2026-01-01T00:03:00Z', '2026-01-01T00:05:00Z'],
  ['range with step', '10-30/10 * * * *', '2026-01-01T00:21:00Z', '2026-01-01T00:30:00Z'],
  ['list of hours', '0 3,9,21 * * *', '2026-01-01T09:00:00Z', '2026-01-01T21:00:00Z'],
  ['weekday names range', '0 9 * * MON-FRI', '2026-01-02T10:00:00Z', '2026-01-05T09:00:00Z'],
  ['month names list', '0 0 1 jan,jul *', '2026-02-01T00:00:00Z', '2026-07-01T00:00:00Z'],
  ['question mark is any', '0 0 ? * ?', '2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z'],
  ['@hourly', '@hourly', '2026-01-01T00:00:01Z', '2026-01-01T01:00:00Z'],
  ['@yearly', '@yearly', '2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z'],
  [
    'fractional second rounds up to the next minute',
    '* * * * *',
    '2026-01-01T00:00:59.999Z',
    '2026-01-01T00:01:00Z',
  ],
  [
    'a moment pinned in time fires again a year later',
    '30 12 15 6 *',
    '2026-06-15T12:30:00Z',
    '2027-06-15T12:30:00Z',
  ],
  [
    'seconds: strictly after an exact hit',
    '30 * * * * *',
    '2026-01-01T00:00:30Z',
    '2026-01-01T00:01:30Z',
  ],
  [
    'start/step runs to the maximum',
    '50/5 * * * *',
    '2026-01-01T00:56:00Z',
    '2026-01-01T01:50:00Z',
  ],
  [
    'day-of-month OR day-of-week when both restricted',
    '0 0 13 * 5',
    '2026-02-01T00:00:00Z',
    '2026-02-06T00:00:00Z',
  ],
  [
    'day-of-month AND day-of-week when one is *',
    '0 0 * 2 1',
    '2026-02-01T00:00:00Z',
    '2026-02-02T00:00:00Z',
  ],
  [
    'time zone argument',
    '0 0 * * *',
    '2026-01-01T00:00:00Z',
    '2026-01-01T18:30:00Z',
    'Asia/Kolkata',
  ],
  [
    'CRON_TZ prefix wins over the argument',
    'CRON_TZ=Asia/Tokyo 0 9 * * *',
    '2026-01-01T00:00:00Z',
    '2026-01-02T00:00:00Z',
    'UTC',
  ],
  [
    'local time in a DST gap is skipped',
    '30 2 * * *',
    '2026-03-07T12:00:00Z',
    '2026-03-09T06:30:00Z',
    'America/New_York',
  ],
  [
    'repeated local hour fires at the first occurrence',
    '30 1 * * *',
    '2026-11-01T04:00:00Z',
    '2026-11-01T05:30:00Z',
    'America/New_York',
  ],
];

describe('nextFire', () => {
  const rows = cases.map(([name, schedule, after, want, tz]) => ({
    name,
    schedule,
    after,
    want,
    tz,
  }));
  it.each(rows)('$name: "$schedule" after $after', ({ schedule, after, tz, want }) => {
    expect(iso(nextFire(schedule, at(after), tz))).toBe(want === null ? null : iso(at(want)));
  });

  it('accepts a parsed schedule and gives the same answer as the string', () => {
    const parsed = parseSchedule('0 */2 * * *');
    const after = at('2026-05-05T05:05:05Z');
    expect(nextFire(parsed, after)).toBe(nextFire('0 */2 * * *', after));
    expect(iso(nextFire(parsed, after))).toBe('2026-05-05T06:00:00.000Z');
  });

  it('walks a schedule tick by tick without skipping or repeating', () => {
    const ticks: string[] = [];
    let t = at('2026-01-31T23:58:00Z');
    for (let i = 0; i < 4; i++) {
      const next = nextFire('*/30 59 23 * * *', t);
      if (next === null) throw new Error('schedule stopped');
      ticks.push(new Date(next).toISOString());
      t = next;
    }
    expect(ticks).toEqual([
      '2026-01-31T23:59:00.000Z',
      '2026-01-31T23:59:30.000Z',
      '2026-02-01T23:59:00.000Z',
      '2026-02-01T23:59:30.000Z',
    ]);
  });
});

describe('parseSchedule rejects invalid schedules', () => {
  const invalid: { schedule: string; message: RegExp }[] = [
    { schedule: '@every 1m', message: /@every is not supported/ },
    { schedule: '@every 30s', message: /@every is not supported/ },
    { schedule: '@often', message: /unknown descriptor/ },
    { schedule: '', message: /empty schedule/ },
    { schedule: '* * * *', message: /expected 5 fields/ },
    { schedule: '* * * * * * *', message: /expected 5 fields/ },
    { schedule: '60 * * * *', message: /minute 60 out of range/ },
    { schedule: '0 24 * * *', message: /hour 24 out of range/ },
    { schedule: '0 0 0 * *', message: /day-of-month 0 out of range/ },
    { schedule: '0 0 1 13 *', message: /month 13 out of range/ },
    { schedule: '0 0 * * 7', message: /day-of-week 7 out of range/ },
    { schedule: '61 * * * * *', message: /second 61 out of range/ },
    { schedule: '*/0 * * * *', message: /step must be positive/ },
    { schedule: '30-10 * * * *', message: /runs backwards/ },
    { schedule: '1,,2 * * * *', message: /empty list item/ },
    { schedule: 'a * * * *', message: /not a number/ },
    { schedule: '1-2-3 * * * *', message: /malformed range/ },
    { schedule: '*/5/2 * * * *', message: /malformed minute field/ },
    { schedule: 'CRON_TZ=Mars/Olympus 0 0 * * *', message: /unknown time zone/ },
  ];

  it.each(invalid)('"$schedule"', ({ schedule, message }) => {
    expect(() => parseSchedule(schedule)).toThrow(CronError);
    expect(() => parseSchedule(schedule)).toThrow(message);
    expect(() => nextFire(schedule, 0)).toThrow(CronError);
  });

  it('rejects an unknown time zone argument', () => {
    expect(() => nextFire('* * * * *', 0, 'Nowhere/Atlantis')).toThrow(/unknown time zone/);
  });
});
