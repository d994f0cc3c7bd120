// The one table of rules for the settings in recovery-config (docs/adr/0064). The loader
// (shared/core/config/recovery-config.ts, shared/runtime/env.ts) checks every value with it, and the
// ValidatingAdmissionPolicy on the ConfigMap is generated from it (config-policy-cel.ts), so a
// value is accepted or refused the same way, with the same message, at apply time and at start-up.

/** A setting's kind: what its value must be. */
export type SettingKind =
  /** A Go-style duration (500ms, 30s, 4m) from minMs to maxMs. */
  | { readonly kind: 'duration'; readonly minMs: number; readonly maxMs: number }
  /** A whole number, digits only, from min to max. */
  | { readonly kind: 'integer'; readonly min: number; readonly max: number }
  /** One of values, in any letter case (read as lower case). */
  | { readonly kind: 'enum'; readonly values: readonly string[] }
  /** A Kubernetes name (DNS-1123 label). */
  | { readonly kind: 'name' }
  /** Comma-separated namespace names (spaces around them ignored), at most maxItems distinct. */
  | { readonly kind: 'namespaces'; readonly maxItems: number };

export type SettingRule = SettingKind & {
  readonly key: string;
  /** The value an unset or empty key means; undefined: the setting is absent (no default). */
  readonly default: string | undefined;
  /** What the loader's message says is expected ("expected <expected>"). */
  readonly expected: string;
};

const duration = (key: string, dflt: string, minMs: number, maxMs: number): SettingRule => ({
  key,
  kind: 'duration',
  minMs,
  maxMs,
  default: dflt,
  expected: `a duration from ${fmt(minMs)} to ${fmt(maxMs)}, such as ${dflt}`,
});
const integer = (key: string, dflt: number, min: number, max: number, what: string) => ({
  key,
  kind: 'integer' as const,
  min,
  max,
  default: String(dflt),
  expected: `${what} from ${min} to ${max}`,
});
const oneOf = (key: string, values: readonly string[], dflt = values[0]): SettingRule => ({
  key,
  kind: 'enum',
  values,
  default: dflt,
  expected: values.length === 2 ? `${values[0]} or ${values[1]}` : `one of ${values.join(', ')}`,
});
const name = (key: string, dflt: string): SettingRule => ({
  key,
  kind: 'name',
  default: dflt,
  expected: 'a Kubernetes name (DNS-1123 label)',
});

/**
 * Every setting of recovery-config, in the order the loader reports problems. Durations all have
 * a range (none may be 0); enumerated values are read in any letter case.
 */
export const CONFIG_RULES: readonly SettingRule[] = Object.freeze([
  // The time rule (docs/adr/0014): 2m30s by default, the reference driver's 30s with early
  // detection off; an hour is far past the HelmRelease's 15-minute budget.
  duration('RECOVERY_GRACE_PERIOD', '2m30s', 1_000, 3_600_000),
  duration('RECOVERY_BACKOFF_INITIAL', '30s', 1_000, 1_800_000),
  duration('RECOVERY_BACKOFF_MAX', '4m', 1_000, 3_600_000),
  integer('RECOVERY_MAX_ATTEMPTS', 5, 1, 100, 'a whole number'),
  oneOf('RECOVERY_MODE', ['enforce', 'observe', 'off']),
  oneOf('RECOVERY_EARLY_DETECTION', ['on', 'off']),
  oneOf('RECOVERY_HEAL_EXTERNAL_ARTIFACTS', ['on', 'off']),
  oneOf('RECOVERY_AUTH', ['off', 'oidc']),
  oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
  name('ALARM_NAME', 'recovery-alarm'),
  name('ALARM_SINK_BROKER', 'default'),
  name('RESYNC_PINGSOURCE', 'resync'),
  // At most 10 minutes: the storm's virtual-clock harness (test/support/storm.ts) needs that much.
  integer('KUBE_REQUEST_TIMEOUT_MS', 10_000, 100, 600_000, 'milliseconds'),
  // detect's sweep budget: with the call in flight and the alarm's it ends inside detect's 300 s.
  integer('SWEEP_BUDGET_MS', 150_000, 100, 200_000, 'milliseconds'),
  integer('SWEEP_PAGE_SIZE', 500, 1, 5000, 'a whole number'),
  integer('DELIVERY_TIMEOUT_SECONDS', 300, 15, 3600, 'whole seconds'),
  integer('EVENT_WRITE_TIMEOUT_MS', 2_000, 50, 60_000, 'milliseconds'),
  {
    key: 'RECOVERY_PACKAGESOURCE_AG_NAMESPACES',
    kind: 'namespaces',
    maxItems: 16,
    default: 'cozy-system',
    expected:
      'at most 16 namespace names (DNS-1123 labels) separated by commas, such as cozy-system',
  },
  {
    key: 'RECOVERY_NAMESPACES',
    kind: 'namespaces',
    maxItems: 64,
    default: undefined,
    expected: 'at most 64 namespace names (DNS-1123 labels) separated by commas',
  },
]);

/** A rule between two durations: `longer` may not be shorter than `shorter`. */
export const CONFIG_ORDER_RULES: readonly { readonly longer: string; readonly shorter: string }[] =
  Object.freeze([{ longer: 'RECOVERY_BACKOFF_MAX', shorter: 'RECOVERY_BACKOFF_INITIAL' }]);

export function ruleOf(key: string): SettingRule {
  const rule = CONFIG_RULES.find((r) => r.key === key);
  if (rule === undefined) throw new Error(`no config rule for ${key}`);
  return rule;
}

/** Longest value shown in a message, in code points. */
export const SHOWN_MAX = 64;

/**
 * The value as a message shows it: trimmed, line breaks as spaces, cut at SHOWN_MAX code points.
 * The policy's CEL does the same (config-policy-cel.ts).
 */
export function shownValue(value: string): string {
  const points = [...value.trim().replace(/[\r\n]/g, ' ')];
  return points.length > SHOWN_MAX ? `${points.slice(0, SHOWN_MAX).join('')}…` : points.join('');
}

/** The loader's message for a bad value of a rule. */
export function problemOf(rule: SettingRule, value: string): string {
  return `${rule.key}="${shownValue(value)}": expected ${rule.expected}`;
}

/** The message for two durations in the wrong order. */
export function orderProblemOf(
  longer: string,
  longerValue: string,
  shorter: string,
  shorterValue: string,
): string {
  return (
    `${longer}="${shownValue(longerValue)}": expected a duration not shorter than ` +
    `${shorter} (${shownValue(shorterValue)})`
  );
}

function fmt(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1_000 === 0) return `${ms / 1_000}s`;
  return `${ms}ms`;
}
