import { describe, expect, it } from 'vitest';
import { CronError, nextFire, parseSchedule } from '../../harness/knative/cron.js';

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

describe('nextFire', () => {
  const cases: {
    name: string;
    schedule: string;
    after: string;
    tz?: string;
    want: string | null;
  }[] = [
    // minute / hour / day / month / year rollovers
    {
      name: 'every minute',
      schedule: '* * * * *',
      after: '2026-01-01T00:00:00Z',
      want: '2026-01-01T00:01:00.000Z',
    },
    {
      name: 'fractional second rounds up to the next minute',
      schedule: '* * * * *',
      after: '2026-01-01T00:00:59.999Z',
      want: '2026-01-01T00:01:00.000Z',
    },
    {
      name: 'minute rolls into the next hour',
      schedule: '5 * * * *',
      after: '2026-01-01T10:06:00Z',
      want: '2026-01-01T11:05:00.000Z',
    },
    {
      name: 'hour rolls into the next day',
      schedule: '30 2 * * *',
      after: '2026-01-01T02:30:00Z',
      want: '2026-01-02T02:30:00.000Z',
    },
    {
      name: 'day rolls into the next month',
      schedule: '0 0 1 * *',
      after: '2026-01-15T00:00:00Z',
      want: '2026-02-01T00:00:00.000Z',
    },
    {
      name: '31st skips short months',
      schedule: '0 0 31 * *',
      after: '2026-03-31T00:00:00Z',
      want: '2026-05-31T00:00:00.000Z',
    },
    {
      name: 'month rolls into the next year',
      schedule: '0 0 1 1 *',
      after: '2026-01-01T00:00:00Z',
      want: '2027-01-01T00:00:00.000Z',
    },
    {
      name: 'year end to new year',
      schedule: '0 0 * * *',
      after: '2026-12-31T23:59:59Z',
      want: '2027-01-01T00:00:00.000Z',
    },
    {
      name: 'leap day waits for a leap year',
      schedule: '0 0 29 2 *',
      after: '2026-03-01T00:00:00Z',
      want: '2028-02-29T00:00:00.000Z',
    },
    {
      name: 'a moment pinned in time fires again a year later',
      schedule: '30 12 15 6 *',
      after: '2026-06-15T12:30:00Z',
      want: '2027-06-15T12:30:00.000Z',
    },
    {
      name: 'an impossible date never fires',
      schedule: '0 0 30 2 *',
      after: '2026-01-01T00:00:00Z',
      want: null,
    },
    // seconds field (6 fields, seconds first)
    {
      name: 'seconds field',
      schedule: '15 * * * * *',
      after: '2026-01-01T00:00:15Z',
      want: '2026-01-01T00:01:15.000Z',
    },
    {
      name: 'seconds: fully pinned moment',
      schedule: '7 8 9 10 11 *',
      after: '2026-01-01T00:00:00Z',
      want: '2026-11-10T09:08:07.000Z',
    },
    {
      name: 'seconds: every 10 s',
      schedule: '*/10 * * * * *',
      after: '2026-01-01T00:00:51Z',
      want: '2026-01-01T00:01:00.000Z',
    },
    {
      name: 'seconds: strictly after an exact hit',
      schedule: '30 * * * * *',
      after: '2026-01-01T00:00:30Z',
      want: '2026-01-01T00:01:30.000Z',
    },
    // steps, ranges, lists, names
    {
      name: 'step */5 minutes',
      schedule: '*/5 * * * *',
      after: '2026-01-01T00:03:00Z',
      want: '2026-01-01T00:05:00.000Z',
    },
    {
      name: 'range with step',
      schedule: '10-30/10 * * * *',
      after: '2026-01-01T00:21:00Z',
      want: '2026-01-01T00:30:00.000Z',
    },
    {
      name: 'start/step runs to the maximum',
      schedule: '50/5 * * * *',
      after: '2026-01-01T00:56:00Z',
      want: '2026-01-01T01:50:00.000Z',
    },
    {
      name: 'list of hours',
      schedule: '0 3,9,21 * * *',
      after: '2026-01-01T09:00:00Z',
      want: '2026-01-01T21:00:00.000Z',
    },
    {
      name: 'weekday names range',
      schedule: '0 9 * * MON-FRI',
      after: '2026-01-02T10:00:00Z',
      want: '2026-01-05T09:00:00.000Z',
    },
    {
      name: 'month names list',
      schedule: '0 0 1 jan,jul *',
      after: '2026-02-01T00:00:00Z',
      want: '2026-07-01T00:00:00.000Z',
    },
    {
      name: 'question mark is any',
      schedule: '0 0 ? * ?',
      after: '2026-01-01T00:00:00Z',
      want: '2026-01-02T00:00:00.000Z',
    },
    {
      name: 'day-of-month OR day-of-week when both restricted',
      schedule: '0 0 13 * 5',
      after: '2026-02-01T00:00:00Z',
      want: '2026-02-06T00:00:00.000Z',
    },
    {
      name: 'day-of-month AND day-of-week when one is *',
      schedule: '0 0 * 2 1',
      after: '2026-02-01T00:00:00Z',
      want: '2026-02-02T00:00:00.000Z',
    },
    // descriptors and time zones
    {
      name: '@hourly',
      schedule: '@hourly',
      after: '2026-01-01T00:00:01Z',
      want: '2026-01-01T01:00:00.000Z',
    },
    {
      name: '@yearly',
      schedule: '@yearly',
      after: '2026-01-01T00:00:00Z',
      want: '2027-01-01T00:00:00.000Z',
    },
    {
      name: 'time zone argument',
      schedule: '0 0 * * *',
      after: '2026-01-01T00:00:00Z',
      tz: 'Asia/Kolkata',
      want: '2026-01-01T18:30:00.000Z',
    },
    {
      name: 'CRON_TZ prefix wins over the argument',
      schedule: 'CRON_TZ=Asia/Tokyo 0 9 * * *',
      after: '2026-01-01T00:00:00Z',
      tz: 'UTC',
      want: '2026-01-02T00:00:00.000Z',
    },
    {
      name: 'local time in a DST gap is skipped',
      schedule: '30 2 * * *',
      after: '2026-03-07T12:00:00Z',
      tz: 'America/New_York',
      want: '2026-03-09T06:30:00.000Z',
    },
    {
      name: 'repeated local hour fires at the first occurrence',
      schedule: '30 1 * * *',
      after: '2026-11-01T04:00:00Z',
      tz: 'America/New_York',
      want: '2026-11-01T05:30:00.000Z',
    },
  ];

  it.each(cases)('$name: "$schedule" after $after', ({ schedule, after, tz, want }) => {
    expect(iso(nextFire(schedule, at(after), tz))).toBe(want);
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
