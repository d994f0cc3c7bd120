// Recovery settings: the reference driver's constants, overridable from the environment.
// The caller passes the environment in; this module never reads process.env.

import { formatDuration, parseDuration } from './duration.js';

export type RecoveryMode = 'enforce' | 'observe' | 'off';

export const RECOVERY_MODES: readonly RecoveryMode[] = ['enforce', 'observe', 'off'];

export interface RecoveryConfig {
  /** How long Ready may sit Unknown on the current generation before the AG counts as stuck. */
  readonly gracePeriodMs: number;
  /** Backoff after the first force; doubles per attempt. */
  readonly backoffInitialMs: number;
  /** Cap of the backoff, and the length of the final window before give-up. */
  readonly backoffMaxMs: number;
  /** Forces before the give-up verdict. */
  readonly maxAttempts: number;
  /** enforce: decide and write; observe: decide and report only; off: honest copy-through only. */
  readonly mode: RecoveryMode;
  /** How far in the future a last-recovery-at timestamp may be before it is treated as malformed. */
  readonly clockSkewMs: number;
}

export const DEFAULT_RECOVERY_CONFIG: RecoveryConfig = Object.freeze({
  gracePeriodMs: 30_000,
  backoffInitialMs: 30_000,
  backoffMaxMs: 240_000,
  maxAttempts: 5,
  mode: 'enforce',
  clockSkewMs: 60_000,
});

export const ENV_GRACE_PERIOD = 'RECOVERY_GRACE_PERIOD';
export const ENV_BACKOFF_INITIAL = 'RECOVERY_BACKOFF_INITIAL';
export const ENV_BACKOFF_MAX = 'RECOVERY_BACKOFF_MAX';
export const ENV_MAX_ATTEMPTS = 'RECOVERY_MAX_ATTEMPTS';
export const ENV_MODE = 'RECOVERY_MODE';

export const MAX_ATTEMPTS_LIMIT = 100;

/** Invalid recovery settings. `problems` holds one line per bad variable. */
export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`invalid recovery configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

const DURATION_FORM = 'a Go-style duration such as 500ms, 30s or 4m';

/**
 * Reads RECOVERY_* variables; unset or empty means the default. Every problem is collected into
 * one ConfigError whose message names the variable, the bad value and the accepted form.
 */
export function parseRecoveryConfig(
  env: Readonly<Record<string, string | undefined>>,
): RecoveryConfig {
  const problems: string[] = [];
  const bad = (name: string, value: string, expected: string): void => {
    problems.push(`${name}=${show(value)}: expected ${expected}`);
  };

  const duration = (name: string, fallback: number, positive: boolean): number | null => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    let ms: number;
    try {
      ms = parseDuration(raw);
    } catch {
      bad(name, raw, DURATION_FORM);
      return null;
    }
    if (positive && ms <= 0) {
      bad(name, raw, `a duration greater than zero, such as 30s`);
      return null;
    }
    return ms;
  };

  const gracePeriodMs = duration(ENV_GRACE_PERIOD, DEFAULT_RECOVERY_CONFIG.gracePeriodMs, false);
  const backoffInitialMs = duration(
    ENV_BACKOFF_INITIAL,
    DEFAULT_RECOVERY_CONFIG.backoffInitialMs,
    true,
  );
  const backoffMaxMs = duration(ENV_BACKOFF_MAX, DEFAULT_RECOVERY_CONFIG.backoffMaxMs, true);
  if (backoffInitialMs !== null && backoffMaxMs !== null && backoffMaxMs < backoffInitialMs) {
    const rawMax = env[ENV_BACKOFF_MAX];
    if (rawMax !== undefined && rawMax !== '') {
      bad(
        ENV_BACKOFF_MAX,
        rawMax,
        `a duration not shorter than ${ENV_BACKOFF_INITIAL} (${formatDuration(backoffInitialMs)})`,
      );
    } else {
      bad(
        ENV_BACKOFF_INITIAL,
        env[ENV_BACKOFF_INITIAL] ?? '',
        `a duration not longer than ${ENV_BACKOFF_MAX} (${formatDuration(backoffMaxMs)})`,
      );
    }
  }

  let maxAttempts: number | null = DEFAULT_RECOVERY_CONFIG.maxAttempts;
  const rawAttempts = env[ENV_MAX_ATTEMPTS];
  if (rawAttempts !== undefined && rawAttempts !== '') {
    const n = /^[0-9]{1,4}$/.test(rawAttempts) ? Number(rawAttempts) : NaN;
    if (!(n >= 1 && n <= MAX_ATTEMPTS_LIMIT)) {
      bad(ENV_MAX_ATTEMPTS, rawAttempts, `a whole number from 1 to ${MAX_ATTEMPTS_LIMIT}`);
      maxAttempts = null;
    } else {
      maxAttempts = n;
    }
  }

  let mode: RecoveryMode | null = DEFAULT_RECOVERY_CONFIG.mode;
  const rawMode = env[ENV_MODE];
  if (rawMode !== undefined && rawMode !== '') {
    mode = RECOVERY_MODES.find((m) => m === rawMode) ?? null;
    if (mode === null) bad(ENV_MODE, rawMode, `one of ${RECOVERY_MODES.join(', ')}`);
  }

  if (
    problems.length > 0 ||
    gracePeriodMs === null ||
    backoffInitialMs === null ||
    backoffMaxMs === null ||
    maxAttempts === null ||
    mode === null
  ) {
    throw new ConfigError(problems);
  }
  return Object.freeze({
    gracePeriodMs,
    backoffInitialMs,
    backoffMaxMs,
    maxAttempts,
    mode,
    clockSkewMs: DEFAULT_RECOVERY_CONFIG.clockSkewMs,
  });
}

function show(value: string): string {
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
}
