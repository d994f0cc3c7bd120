// Cron schedules as a Knative PingSource accepts them: 5 fields (minute hour day-of-month month
// day-of-week) or 6 fields with seconds first; `*`, `?`, numbers, names (JAN..DEC, SUN..SAT),
// ranges `a-b`, lists `a,b`, steps `*/n`, `a-b/n`, `a/n` (= a to max, step n); the descriptors
// @yearly/@annually/@monthly/@weekly/@daily/@midnight/@hourly; an optional `CRON_TZ=<zone>` (or
// `TZ=<zone>`) prefix. `@every` is rejected, as Knative's webhook does.
//
// Semantics follow the cron library Knative uses: when both day-of-month and day-of-week are
// restricted a day matching either fires; when one of them is `*` or `?` both must match. The
// search gives up after five years (a schedule that can never fire, like 30 FEB, returns null).
// Local times skipped by a daylight-saving gap do not fire; in a repeated hour the first occurrence
// wins.

export class CronError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CronError';
  }
}

export interface CronSchedule {
  /** The expression as given. */
  readonly expression: string;
  /** Time zone from a CRON_TZ=/TZ= prefix, when present (it overrides nextFire's argument). */
  readonly timezone: string | undefined;
  readonly seconds: readonly boolean[];
  readonly minutes: readonly boolean[];
  readonly hours: readonly boolean[];
  readonly daysOfMonth: readonly boolean[];
  readonly months: readonly boolean[];
  readonly daysOfWeek: readonly boolean[];
  /** The day-of-month field is `*` or `?` (unrestricted). */
  readonly domStar: boolean;
  /** The day-of-week field is `*` or `?` (unrestricted). */
  readonly dowStar: boolean;
}

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const SECOND: FieldSpec = { name: 'second', min: 0, max: 59 };
const MINUTE: FieldSpec = { name: 'minute', min: 0, max: 59 };
const HOUR: FieldSpec = { name: 'hour', min: 0, max: 23 };
const DOM: FieldSpec = { name: 'day-of-month', min: 1, max: 31 };
const MONTH: FieldSpec = {
  name: 'month',
  min: 1,
  max: 12,
  names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'],
};
const DOW: FieldSpec = {
  name: 'day-of-week',
  min: 0,
  max: 6,
  names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'],
};

const DESCRIPTORS: Record<string, string> = {
  '@yearly': '0 0 0 1 1 *',
  '@annually': '0 0 0 1 1 *',
  '@monthly': '0 0 0 1 * *',
  '@weekly': '0 0 0 * * 0',
  '@daily': '0 0 0 * * *',
  '@midnight': '0 0 0 * * *',
  '@hourly': '0 0 * * * *',
};

const SEARCH_YEARS = 5;

/** Parses a schedule; throws CronError with a message naming the problem. */
export function parseSchedule(expression: string): CronSchedule {
  if (typeof expression !== 'string') throw new CronError('schedule must be a string');
  let rest = expression.trim();
  let timezone: string | undefined;
  const tzMatch = /^(?:CRON_TZ|TZ)=(\S+)\s+(.*)$/.exec(rest);
  if (tzMatch) {
    timezone = tzMatch[1];
    rest = (tzMatch[2] ?? '').trim();
    checkTimezone(timezone ?? '');
  }
  if (rest === '') throw new CronError('empty schedule');
  if (rest.startsWith('@')) {
    if (rest.startsWith('@every')) {
      throw new CronError(`"${rest}": @every is not supported by PingSource`);
    }
    const expanded = DESCRIPTORS[rest.toLowerCase()];
    if (expanded === undefined) throw new CronError(`unknown descriptor "${rest}"`);
    rest = expanded;
  }
  const fields = rest.split(/\s+/);
  if (fields.length === 5) fields.unshift('0');
  if (fields.length !== 6) {
    throw new CronError(
      `expected 5 fields (or 6 with seconds first), got ${fields.length} in "${expression}"`,
    );
  }
  const [sec, min, hour, dom, month, dow] = fields as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const domField = parseField(dom, DOM);
  const dowField = parseField(dow, DOW);
  return {
    expression,
    timezone,
    seconds: parseField(sec, SECOND).allowed,
    minutes: parseField(min, MINUTE).allowed,
    hours: parseField(hour, HOUR).allowed,
    daysOfMonth: domField.allowed,
    months: parseField(month, MONTH).allowed,
    daysOfWeek: dowField.allowed,
    domStar: domField.star,
    dowStar: dowField.star,
  };
}

function parseField(text: string, spec: FieldSpec): { allowed: boolean[]; star: boolean } {
  const allowed = new Array<boolean>(spec.max + 1).fill(false);
  let star = false;
  for (const part of text.split(',')) {
    if (part === '') throw new CronError(`empty list item in ${spec.name} field "${text}"`);
    const [rangeText, stepText, extra] = part.split('/');
    if (extra !== undefined || rangeText === undefined || rangeText === '') {
      throw new CronError(`malformed ${spec.name} field "${text}"`);
    }
    let step = 1;
    if (stepText !== undefined) {
      step = parseNumber(stepText, spec, 'step');
      if (step < 1) throw new CronError(`step must be positive in ${spec.name} field "${text}"`);
    }
    let lo: number;
    let hi: number;
    if (rangeText === '*' || rangeText === '?') {
      lo = spec.min;
      hi = spec.max;
      if (step === 1) star = true;
    } else {
      const bounds = rangeText.split('-');
      if (bounds.length > 2 || bounds.some((b) => b === '')) {
        throw new CronError(`malformed range "${rangeText}" in ${spec.name} field`);
      }
      lo = parseValue(bounds[0] ?? '', spec);
      hi = bounds.length === 2 ? parseValue(bounds[1] ?? '', spec) : stepText ? spec.max : lo;
      if (lo > hi) throw new CronError(`range "${rangeText}" runs backwards in ${spec.name} field`);
    }
    for (let v = lo; v <= hi; v += step) allowed[v] = true;
  }
  return { allowed, star };
}

function parseValue(text: string, spec: FieldSpec): number {
  const byName = spec.names?.indexOf(text.toUpperCase()) ?? -1;
  if (byName >= 0) return byName + spec.min;
  const v = parseNumber(text, spec, 'value');
  if (v < spec.min || v > spec.max) {
    throw new CronError(`${spec.name} ${v} out of range ${spec.min}-${spec.max}`);
  }
  return v;
}

function parseNumber(text: string, spec: FieldSpec, what: string): number {
  if (!/^\d+$/.test(text)) throw new CronError(`${spec.name} ${what} "${text}" is not a number`);
  return Number(text);
}

// ---- time zones -------------------------------------------------------------------------------

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timezone: string): Intl.DateTimeFormat {
  let f = formatters.get(timezone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('en-US', {
        timeZone: timezone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch {
      throw new CronError(`unknown time zone "${timezone}"`);
    }
    formatters.set(timezone, f);
  }
  return f;
}

function checkTimezone(timezone: string): void {
  if (!isUtc(timezone)) formatterFor(timezone);
}

function isUtc(timezone: string): boolean {
  return timezone === 'UTC' || timezone === 'Etc/UTC' || timezone === 'GMT';
}

/** Wall-clock time in `timezone` of an instant, as "naive" epoch ms (the wall clock read as UTC). */
function wallClock(instantMs: number, timezone: string): number {
  const whole = Math.floor(instantMs / 1000) * 1000;
  if (isUtc(timezone)) return whole;
  const parts: Record<string, number> = {};
  for (const p of formatterFor(timezone).formatToParts(new Date(whole))) {
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  }
  return Date.UTC(
    parts.year ?? 1970,
    (parts.month ?? 1) - 1,
    parts.day ?? 1,
    parts.hour ?? 0,
    parts.minute ?? 0,
    parts.second ?? 0,
  );
}

/** Instants whose wall clock in `timezone` is `naive`: none (DST gap), one, or two (overlap). */
function instantsOf(naive: number, timezone: string): number[] {
  if (isUtc(timezone)) return [naive];
  const day = 86_400_000;
  const offsets = new Set([
    wallClock(naive - day, timezone) - (naive - day),
    wallClock(naive + day, timezone) - (naive + day),
    wallClock(naive, timezone) - naive,
  ]);
  const out = new Set<number>();
  for (const offset of offsets) {
    const candidate = naive - offset;
    if (wallClock(candidate, timezone) === naive) out.add(candidate);
  }
  return [...out].sort((a, b) => a - b);
}

// ---- next fire time ---------------------------------------------------------------------------

/**
 * The first time strictly after `afterMs` (epoch ms) the schedule fires, as epoch ms on a whole
 * second; null when it cannot fire within five years. `timezone` is an IANA zone (default UTC);
 * a CRON_TZ= prefix in the schedule wins over it. Throws CronError for an invalid schedule or zone.
 */
export function nextFire(
  schedule: string | CronSchedule,
  afterMs: number,
  timezone = 'UTC',
): number | null {
  if (!Number.isFinite(afterMs)) throw new CronError(`afterMs must be a finite number`);
  const s = typeof schedule === 'string' ? parseSchedule(schedule) : schedule;
  const tz = s.timezone ?? timezone;
  checkTimezone(tz);
  const start = Math.floor(afterMs / 1000) * 1000 + 1000;
  let t = wallClock(start, tz);
  const limitYear = new Date(t).getUTCFullYear() + SEARCH_YEARS;

  for (;;) {
    const d = new Date(t);
    const year = d.getUTCFullYear();
    const month = d.getUTCMonth();
    const day = d.getUTCDate();
    const hour = d.getUTCHours();
    const minute = d.getUTCMinutes();
    const second = d.getUTCSeconds();
    if (year > limitYear) return null;

    if (!s.months[month + 1]) {
      t = Date.UTC(year, month + 1, 1);
      continue;
    }
    if (!dayMatches(s, day, d.getUTCDay())) {
      t = Date.UTC(year, month, day + 1);
      continue;
    }
    if (!s.hours[hour]) {
      const h = nextAllowed(s.hours, hour);
      t = h === undefined ? Date.UTC(year, month, day + 1) : Date.UTC(year, month, day, h);
      continue;
    }
    if (!s.minutes[minute]) {
      const m = nextAllowed(s.minutes, minute);
      t =
        m === undefined
          ? Date.UTC(year, month, day, hour + 1)
          : Date.UTC(year, month, day, hour, m);
      continue;
    }
    if (!s.seconds[second]) {
      const sec = nextAllowed(s.seconds, second);
      t =
        sec === undefined
          ? Date.UTC(year, month, day, hour, minute + 1)
          : Date.UTC(year, month, day, hour, minute, sec);
      continue;
    }
    const instant = instantsOf(t, tz).find((i) => i > afterMs);
    if (instant !== undefined) return instant;
    t += 1000;
  }
}

function dayMatches(s: CronSchedule, dayOfMonth: number, dayOfWeek: number): boolean {
  const domMatch = s.daysOfMonth[dayOfMonth] === true;
  const dowMatch = s.daysOfWeek[dayOfWeek] === true;
  if (s.domStar || s.dowStar) return domMatch && dowMatch;
  return domMatch || dowMatch;
}

function nextAllowed(allowed: readonly boolean[], after: number): number | undefined {
  for (let v = after + 1; v < allowed.length; v++) if (allowed[v]) return v;
  return undefined;
}
