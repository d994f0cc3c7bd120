// Go-style durations ("500ms", "30s", "1h30m", "1.5s"), returned and accepted as milliseconds.

const NS_PER_MS = 1e6;

/** Nanoseconds per unit, as accepted by Go's time.ParseDuration. */
const UNIT_NS: Readonly<Record<string, number>> = {
  ns: 1,
  us: 1e3,
  µs: 1e3, // U+00B5 MICRO SIGN
  μs: 1e3, // U+03BC GREEK SMALL LETTER MU
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};

/** Go's limit: a time.Duration is an int64 count of nanoseconds. */
const MAX_NS = 2 ** 63 - 1;

const SEGMENT = /([0-9]*)(?:\.([0-9]*))?(ns|us|µs|μs|ms|s|m|h)/y;

/**
 * Parses a Go-style duration into milliseconds. No sign, no spaces; every number needs a unit
 * except a bare "0". Throws an Error naming the input on anything else.
 */
export function parseDuration(text: string): number {
  if (typeof text !== 'string' || text.length === 0 || text.length > 256) {
    throw new Error(`invalid duration ${quote(text)}`);
  }
  if (text === '0') return 0;
  let totalNs = 0;
  let pos = 0;
  while (pos < text.length) {
    SEGMENT.lastIndex = pos;
    const match = SEGMENT.exec(text);
    if (match === null) throw new Error(`invalid duration ${quote(text)}`);
    const whole = match[1] ?? '';
    const fraction = match[2];
    const unit = UNIT_NS[match[3] ?? ''];
    if (unit === undefined || (whole === '' && (fraction === undefined || fraction === ''))) {
      throw new Error(`invalid duration ${quote(text)}`);
    }
    let ns = whole === '' ? 0 : Number(whole) * unit;
    if (fraction !== undefined && fraction !== '') {
      ns += (Number(fraction) * unit) / 10 ** fraction.length;
    }
    totalNs += ns;
    if (!Number.isFinite(totalNs) || totalNs > MAX_NS) {
      throw new Error(`invalid duration ${quote(text)}: out of range`);
    }
    pos = SEGMENT.lastIndex;
  }
  return totalNs / NS_PER_MS;
}

/**
 * Formats milliseconds compactly, Go-like but without zero components:
 * 30000 -> "30s", 90000 -> "1m30s", 240000 -> "4m", 500 -> "500ms", 0 -> "0s".
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) throw new RangeError(`cannot format duration ${String(ms)}`);
  const ns = Math.round(Math.abs(ms) * NS_PER_MS);
  const sign = ms < 0 && ns > 0 ? '-' : '';
  if (ns === 0) return '0s';
  if (ns < 1e3) return `${sign}${ns}ns`;
  if (ns < 1e6) return `${sign}${decimal(ns, 1e3)}µs`;
  if (ns < 1e9) return `${sign}${decimal(ns, 1e6)}ms`;
  const hours = Math.floor(ns / 3600e9);
  const minutes = Math.floor((ns - hours * 3600e9) / 60e9);
  const secondsNs = ns - hours * 3600e9 - minutes * 60e9;
  let out = sign;
  if (hours > 0) out += `${hours}h`;
  if (minutes > 0) out += `${minutes}m`;
  if (secondsNs > 0) out += `${decimal(secondsNs, 1e9)}s`;
  return out;
}

/** value/unit in decimal, trailing fraction zeros trimmed, exact for integer inputs. */
function decimal(value: number, unit: number): string {
  const whole = Math.floor(value / unit);
  const rest = value - whole * unit;
  if (rest === 0) return String(whole);
  const digits = String(unit).length - 1;
  const fraction = String(rest).padStart(digits, '0').replace(/0+$/, '');
  return `${whole}.${fraction}`;
}

function quote(text: unknown): string {
  const s = typeof text === 'string' ? text : String(text);
  return JSON.stringify(s.length > 64 ? `${s.slice(0, 64)}…` : s);
}
