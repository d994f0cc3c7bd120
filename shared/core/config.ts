// Recovery settings: the reference driver's constants, overridable from the environment.
// The caller passes the environment in; this module never reads process.env.

import { formatDuration, parseDuration } from './duration.js';
import { isDns1123Label } from './names.js';

export type RecoveryMode = 'enforce' | 'observe' | 'off';

export const RECOVERY_MODES: readonly RecoveryMode[] = ['enforce', 'observe', 'off'];

export interface RecoveryConfig {
  /**
   * The time rule, the fallback for stalls that leave no signal: how long Ready may sit Unknown on
   * the current generation (outputs saved) before the AG counts as stuck.
   */
  readonly gracePeriodMs: number;
  /**
   * Force as soon as an AG's outputs move while its Ready stays Unknown (the lost write itself,
   * seen by comparing the AG with its previous version), instead of waiting for the time rule.
   */
  readonly earlyDetection: boolean;
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

/**
 * The time rule's default. Honest builds of up to 2 minutes must never be forced, and the
 * SourceWatcherStalled verdict for a stall with no signal must come within the 15-minute
 * HelmRelease budget: grace + 30 s + 1 m + 2 m + 4 m + the 4 m final window = grace + 11.5 m.
 * 2.5 m keeps 30 s above the longest honest build and the verdict at about 14 m
 * (docs/adr/0014-early-detection.md has the measurements).
 */
export const DEFAULT_GRACE_PERIOD_MS = 150_000;
/** The reference driver's grace period (cozystack PR #3182), for RECOVERY_EARLY_DETECTION=off parity. */
export const REFERENCE_GRACE_PERIOD_MS = 30_000;

export const DEFAULT_RECOVERY_CONFIG: RecoveryConfig = Object.freeze({
  gracePeriodMs: DEFAULT_GRACE_PERIOD_MS,
  earlyDetection: true,
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
export const ENV_EARLY_DETECTION = 'RECOVERY_EARLY_DETECTION';

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

  let earlyDetection: boolean | null = DEFAULT_RECOVERY_CONFIG.earlyDetection;
  const rawEarly = env[ENV_EARLY_DETECTION];
  if (rawEarly !== undefined && rawEarly !== '') {
    earlyDetection = rawEarly === 'on' ? true : rawEarly === 'off' ? false : null;
    if (earlyDetection === null) bad(ENV_EARLY_DETECTION, rawEarly, 'on or off');
  }

  if (
    problems.length > 0 ||
    earlyDetection === null ||
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
    earlyDetection,
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

/**
 * Where Cozystack's PackageSource controller creates the AGs it generates: "Namespace is always
 * cozy-system" (cozystack internal/operator/packagesource_reconciler.go, docs/adr/0053). Only an AG
 * in one of these namespaces can be a PackageSource's.
 */
export const ENV_PACKAGESOURCE_AG_NAMESPACES = 'RECOVERY_PACKAGESOURCE_AG_NAMESPACES';
export const DEFAULT_PACKAGESOURCE_AG_NAMESPACES: readonly string[] = Object.freeze([
  'cozy-system',
]);
export const MAX_PACKAGESOURCE_AG_NAMESPACES = 16;

/**
 * RECOVERY_PACKAGESOURCE_AG_NAMESPACES: a comma-separated list of namespace names (spaces around
 * them ignored, repeats dropped); unset or empty means cozy-system. Throws a ConfigError that names
 * the variable, the bad entry and the accepted form.
 */
export function parsePackageSourceAgNamespaces(
  env: Readonly<Record<string, string | undefined>>,
): readonly string[] {
  const raw = env[ENV_PACKAGESOURCE_AG_NAMESPACES];
  if (raw === undefined || raw.trim() === '') return DEFAULT_PACKAGESOURCE_AG_NAMESPACES;
  const form = `a comma-separated list of namespace names (DNS-1123 labels), such as cozy-system`;
  const entries = raw.split(',').map((e) => e.trim());
  const problems: string[] = [];
  for (const e of entries) {
    if (!isDns1123Label(e)) {
      problems.push(
        `${ENV_PACKAGESOURCE_AG_NAMESPACES}=${show(raw)}: ` +
          `${e === '' ? 'an empty entry' : `${show(e)} is not a namespace name`}; expected ${form}`,
      );
      break;
    }
  }
  const unique = [...new Set(entries)];
  if (problems.length === 0 && unique.length > MAX_PACKAGESOURCE_AG_NAMESPACES) {
    problems.push(
      `${ENV_PACKAGESOURCE_AG_NAMESPACES}=${show(raw)}: ` +
        `expected at most ${MAX_PACKAGESOURCE_AG_NAMESPACES} namespaces`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(unique);
}
