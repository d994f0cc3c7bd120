// RFC 3339 timestamps <-> epoch milliseconds. Strict parsing: a value the API server or Go's
// time.Parse(time.RFC3339Nano) would not produce is rejected as null rather than guessed at.

const RFC3339 =
  /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?(?:(Z)|([+-])([0-9]{2}):([0-9]{2}))$/;

const MS_PER_DAY = 86_400_000;
/** 400 Gregorian years are exactly 146097 days; used to keep Date.UTC away from years 0..99. */
const FOUR_CENTURIES_MS = 146_097 * MS_PER_DAY;

/** Parses a strict RFC 3339 timestamp into whole epoch milliseconds; anything else is null. */
export function parseTime(text: unknown): number | null {
  if (typeof text !== 'string' || text.length > 40) return null;
  const m = RFC3339.exec(text);
  if (m === null) return null;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  const second = Number(m[6]);
  if (month < 1 || month > 12) return null;
  if (day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMs = 0;
  if (m[8] === undefined) {
    const offHours = Number(m[10]);
    const offMinutes = Number(m[11]);
    if (offHours > 23 || offMinutes > 59) return null;
    offsetMs = (offHours * 60 + offMinutes) * 60_000 * (m[9] === '-' ? -1 : 1);
  }
  const base =
    Date.UTC(year + 400, month - 1, day, hour, minute, second) - FOUR_CENTURIES_MS - offsetMs;
  // Whole milliseconds: digits past the third are truncated, so that every parsed time survives
  // formatTimeNano -> parseTime unchanged (the resume rule compares two such times exactly).
  const fraction = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  return base + fraction;
}

/** "2026-11-29T16:30:06.123000000Z": UTC, always nine fraction digits (RFC3339Nano-compatible). */
export function formatTimeNano(ms: number): string {
  const whole = Math.floor(ms);
  let subMsNs = Math.round((ms - whole) * 1e6);
  let base = whole;
  if (subMsNs >= 1e6) {
    base += 1;
    subMsNs -= 1e6;
  }
  const iso = isoOf(base);
  return `${iso.slice(0, 19)}.${iso.slice(20, 23)}${String(subMsNs).padStart(6, '0')}Z`;
}

/** "2026-11-29T16:30:06Z": truncated to whole seconds, like metav1.Time. */
export function formatTimeSeconds(ms: number): string {
  return `${isoOf(Math.floor(ms / 1000) * 1000).slice(0, 19)}Z`;
}

function isoOf(ms: number): string {
  if (!Number.isFinite(ms)) throw new RangeError(`cannot format time ${String(ms)}`);
  const iso = new Date(ms).toISOString();
  if (iso.length !== 24) throw new RangeError(`time ${ms} is outside years 0000..9999`);
  return iso;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) {
    const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
    return leap ? 29 : 28;
  }
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** "2026-11-29T16:30:06.123000Z": UTC, six fraction digits, like metav1.MicroTime. */
export function formatTimeMicro(ms: number): string {
  const nano = formatTimeNano(ms);
  return `${nano.slice(0, 26)}Z`;
}
