// Recovery settings: the reference driver's constants, overridable from the environment.
// The caller passes the environment in; this module never reads process.env.

import { checkSetting, readSettings } from './check.js';
import { CONFIG_ORDER_RULES, orderProblemOf, ruleOf } from './rules.js';

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

/** The keys parseRecoveryConfig reads, each by its rule in rules.ts. */
const RECOVERY_KEYS = [
  ENV_GRACE_PERIOD,
  ENV_BACKOFF_INITIAL,
  ENV_BACKOFF_MAX,
  ENV_MAX_ATTEMPTS,
  ENV_MODE,
  ENV_EARLY_DETECTION,
] as const;

/**
 * Reads RECOVERY_* variables by their rules (rules.ts); unset or empty means the default.
 * Every problem is collected into one ConfigError whose lines are the rules' own messages (the
 * admission policy on recovery-config refuses the same values with the same lines).
 */
export function parseRecoveryConfig(
  env: Readonly<Record<string, string | undefined>>,
): RecoveryConfig {
  const { values, raw, problems } = readSettings(env, RECOVERY_KEYS);
  for (const { longer, shorter } of CONFIG_ORDER_RULES) {
    const long = values.get(longer);
    const short = values.get(shorter);
    if (typeof long === 'number' && typeof short === 'number' && long < short) {
      problems.push(orderProblemOf(longer, raw.get(longer) ?? '', shorter, raw.get(shorter) ?? ''));
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const num = (key: string): number => values.get(key) as number;
  return Object.freeze({
    gracePeriodMs: num(ENV_GRACE_PERIOD),
    earlyDetection: values.get(ENV_EARLY_DETECTION) === 'on',
    backoffInitialMs: num(ENV_BACKOFF_INITIAL),
    backoffMaxMs: num(ENV_BACKOFF_MAX),
    maxAttempts: num(ENV_MAX_ATTEMPTS),
    mode: values.get(ENV_MODE) as RecoveryMode,
    clockSkewMs: DEFAULT_RECOVERY_CONFIG.clockSkewMs,
  });
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
export const MAX_PACKAGESOURCE_AG_NAMESPACES = 16; // its rule's maxItems

/**
 * RECOVERY_PACKAGESOURCE_AG_NAMESPACES by its rule (rules.ts): a comma-separated list of
 * namespace names (spaces around them ignored, repeats dropped); unset or empty means cozy-system.
 * Throws a ConfigError with the rule's message.
 */
export function parsePackageSourceAgNamespaces(
  env: Readonly<Record<string, string | undefined>>,
): readonly string[] {
  const result = checkSetting(
    ruleOf(ENV_PACKAGESOURCE_AG_NAMESPACES),
    env[ENV_PACKAGESOURCE_AG_NAMESPACES],
  );
  if (!result.ok) throw new ConfigError([result.problem]);
  return result.value as readonly string[];
}
