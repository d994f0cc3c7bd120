// Good and bad values of every setting with a rule (shared/core/config/rules.ts), one table for
// the loader's unit test and for the test that the admission policy on recovery-config agrees
// with the loader on the real kube-apiserver (test/integration/config-policy.test.ts).

/** [key, value, what it reads as]: accepted by the loader and the policy. */
export const GOOD_VALUES: readonly (readonly [string, string, unknown])[] = [
  ['RECOVERY_GRACE_PERIOD', '2m30s', 150_000],
  ['RECOVERY_GRACE_PERIOD', '1s', 1_000],
  ['RECOVERY_GRACE_PERIOD', '1h', 3_600_000],
  ['RECOVERY_GRACE_PERIOD', '1.5s', 1_500],
  ['RECOVERY_GRACE_PERIOD', ' 45s ', 45_000],
  ['RECOVERY_GRACE_PERIOD', '59m60s', 3_600_000],
  ['RECOVERY_GRACE_PERIOD', '1000ms', 1_000],
  // Not longer than RECOVERY_BACKOFF_MAX's default (4m): the order rule.
  ['RECOVERY_BACKOFF_INITIAL', '4m', 240_000],
  ['RECOVERY_BACKOFF_INITIAL', '1s', 1_000],
  ['RECOVERY_BACKOFF_MAX', '4m', 240_000],
  ['RECOVERY_MAX_ATTEMPTS', '1', 1],
  ['RECOVERY_MAX_ATTEMPTS', '100', 100],
  ['RECOVERY_MAX_ATTEMPTS', '007', 7],
  ['RECOVERY_MODE', 'observe', 'observe'],
  ['RECOVERY_MODE', 'Enforce', 'enforce'],
  ['RECOVERY_MODE', 'OFF', 'off'],
  ['RECOVERY_EARLY_DETECTION', 'Off', 'off'],
  ['RECOVERY_HEAL_EXTERNAL_ARTIFACTS', 'ON', 'on'],
  ['RECOVERY_AUTH', 'off', 'off'],
  ['LOG_LEVEL', 'DEBUG', 'debug'],
  ['LOG_LEVEL', '', 'info'],
  ['ALARM_NAME', 'my-alarm', 'my-alarm'],
  ['ALARM_SINK_BROKER', 'default', 'default'],
  ['RESYNC_PINGSOURCE', 'resync2', 'resync2'],
  ['KUBE_REQUEST_TIMEOUT_MS', '100', 100],
  ['SWEEP_BUDGET_MS', '200000', 200_000],
  ['SWEEP_PAGE_SIZE', '5000', 5000],
  ['DELIVERY_TIMEOUT_SECONDS', '15', 15],
  ['EVENT_WRITE_TIMEOUT_MS', '60000', 60_000],
  ['RECOVERY_PACKAGESOURCE_AG_NAMESPACES', 'cozy-system, packages', ['cozy-system', 'packages']],
  ['RECOVERY_PACKAGESOURCE_AG_NAMESPACES', 'a,a', ['a']],
  ['RECOVERY_NAMESPACES', 'flux-apps', ['flux-apps']],
];

const D = (range: string, example: string) => `a duration from ${range}, such as ${example}`;
const NAME = 'a Kubernetes name (DNS-1123 label)';
const AG_NS =
  'at most 16 namespace names (DNS-1123 labels) separated by commas, such as cozy-system';

/** [key, value, the message's text after "expected "]: refused by both, with the same line. */
export const BAD_VALUES: readonly (readonly [string, string, string])[] = [
  ['RECOVERY_GRACE_PERIOD', '30x', D('1s to 1h', '2m30s')],
  ['RECOVERY_GRACE_PERIOD', '0s', D('1s to 1h', '2m30s')],
  ['RECOVERY_GRACE_PERIOD', '0', D('1s to 1h', '2m30s')],
  ['RECOVERY_GRACE_PERIOD', '999ms', D('1s to 1h', '2m30s')],
  ['RECOVERY_GRACE_PERIOD', '1h0.5s', D('1s to 1h', '2m30s')],
  ['RECOVERY_GRACE_PERIOD', '-1s', D('1s to 1h', '2m30s')],
  ['RECOVERY_GRACE_PERIOD', '30', D('1s to 1h', '2m30s')],
  ['RECOVERY_GRACE_PERIOD', '.s', D('1s to 1h', '2m30s')],
  ['RECOVERY_GRACE_PERIOD', '1 s', D('1s to 1h', '2m30s')],
  ['RECOVERY_GRACE_PERIOD', '99999999999999999999h', D('1s to 1h', '2m30s')],
  ['RECOVERY_BACKOFF_INITIAL', '31m', D('1s to 30m', '30s')],
  ['RECOVERY_BACKOFF_MAX', '2h', D('1s to 1h', '4m')],
  ['RECOVERY_MAX_ATTEMPTS', '0', 'a whole number from 1 to 100'],
  ['RECOVERY_MAX_ATTEMPTS', '101', 'a whole number from 1 to 100'],
  ['RECOVERY_MAX_ATTEMPTS', '2.5', 'a whole number from 1 to 100'],
  ['RECOVERY_MAX_ATTEMPTS', '-3', 'a whole number from 1 to 100'],
  ['RECOVERY_MAX_ATTEMPTS', '12345678901234567', 'a whole number from 1 to 100'],
  ['RECOVERY_MODE', 'dry-run', 'one of enforce, observe, off'],
  ['RECOVERY_MODE', 'obsérve', 'one of enforce, observe, off'],
  ['RECOVERY_EARLY_DETECTION', 'true', 'on or off'],
  ['RECOVERY_HEAL_EXTERNAL_ARTIFACTS', 'yes', 'on or off'],
  ['RECOVERY_AUTH', 'OIDC2', 'off or oidc'],
  ['LOG_LEVEL', 'loud', 'one of fatal, error, warn, info, debug, trace, silent'],
  ['ALARM_NAME', 'Bad_Name', NAME],
  ['ALARM_SINK_BROKER', 'a'.repeat(64), NAME],
  ['RESYNC_PINGSOURCE', 'resync.', NAME],
  ['KUBE_REQUEST_TIMEOUT_MS', '99', 'milliseconds from 100 to 600000'],
  ['SWEEP_BUDGET_MS', '150s', 'milliseconds from 100 to 200000'],
  ['SWEEP_PAGE_SIZE', '5001', 'a whole number from 1 to 5000'],
  ['DELIVERY_TIMEOUT_SECONDS', '14', 'whole seconds from 15 to 3600'],
  ['EVENT_WRITE_TIMEOUT_MS', '10', 'milliseconds from 50 to 60000'],
  ['RECOVERY_PACKAGESOURCE_AG_NAMESPACES', 'cozy-system,', AG_NS],
  ['RECOVERY_PACKAGESOURCE_AG_NAMESPACES', 'Cozy', AG_NS],
  [
    'RECOVERY_PACKAGESOURCE_AG_NAMESPACES',
    Array.from({ length: 17 }, (_, i) => `n${i}`).join(','),
    AG_NS,
  ],
  [
    'RECOVERY_NAMESPACES',
    'a b',
    'at most 64 namespace names (DNS-1123 labels) separated by commas',
  ],
];

/** A bad value's whole line: KEY="shown": expected .... */
export function badLine(key: string, shown: string, expected: string): string {
  return `${key}="${shown}": expected ${expected}`;
}
