import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  DEFAULT_RECOVERY_CONFIG,
  parseRecoveryConfig,
  type RecoveryConfig,
} from '../../../shared/core/index.js';
import { DOCUMENTED_RECOVERY_DEFAULTS } from '../recovery-defaults.js';

const D = DEFAULT_RECOVERY_CONFIG;

describe('parseRecoveryConfig', () => {
  it('uses the reference backoff, early detection, and a 2m30s time rule by default', () => {
    expect(parseRecoveryConfig({})).toEqual(DOCUMENTED_RECOVERY_DEFAULTS);
  });

  it.each<[Record<string, string | undefined>, Partial<RecoveryConfig>]>([
    [{ RECOVERY_GRACE_PERIOD: '' }, {}],
    [{ RECOVERY_GRACE_PERIOD: undefined }, {}],
    [{ RECOVERY_GRACE_PERIOD: '1s' }, { gracePeriodMs: 1_000 }],
    [{ RECOVERY_MODE: 'Observe' }, { mode: 'observe' }],
    [{ RECOVERY_EARLY_DETECTION: ' OFF ' }, { earlyDetection: false }],
    [{ RECOVERY_BACKOFF_INITIAL: ' 30s' }, {}],
    [{ RECOVERY_GRACE_PERIOD: '45s' }, { gracePeriodMs: 45_000 }],
    [{ RECOVERY_BACKOFF_INITIAL: '10s' }, { backoffInitialMs: 10_000 }],
    [{ RECOVERY_BACKOFF_INITIAL: '4m' }, { backoffInitialMs: 240_000 }],
    [{ RECOVERY_BACKOFF_MAX: '1h' }, { backoffMaxMs: 3_600_000 }],
    [{ RECOVERY_BACKOFF_MAX: '30s' }, { backoffMaxMs: 30_000 }],
    [{ RECOVERY_MAX_ATTEMPTS: '1' }, { maxAttempts: 1 }],
    [{ RECOVERY_MAX_ATTEMPTS: '100' }, { maxAttempts: 100 }],
    [{ RECOVERY_MODE: 'observe' }, { mode: 'observe' }],
    [{ RECOVERY_MODE: 'off' }, { mode: 'off' }],
    [{ RECOVERY_MODE: 'enforce', UNRELATED: 'x' }, {}],
    [{ RECOVERY_EARLY_DETECTION: 'on' }, { earlyDetection: true }],
    [{ RECOVERY_EARLY_DETECTION: 'off' }, { earlyDetection: false }],
    [{ RECOVERY_EARLY_DETECTION: '' }, {}],
    [
      { RECOVERY_EARLY_DETECTION: 'off', RECOVERY_GRACE_PERIOD: '30s' },
      { earlyDetection: false, gracePeriodMs: 30_000 },
    ],
  ])('accepts %j', (env, expected) => {
    expect(parseRecoveryConfig(env)).toEqual({ ...D, ...expected });
  });

  const duration = (key: string, value: string, range: string, example: string) =>
    `${key}="${value}": expected a duration from ${range}, such as ${example}`;
  it.each<[Record<string, string>, string]>([
    [{ RECOVERY_BACKOFF_MAX: '4x' }, duration('RECOVERY_BACKOFF_MAX', '4x', '1s to 1h', '4m')],
    [
      { RECOVERY_GRACE_PERIOD: '30x' },
      duration('RECOVERY_GRACE_PERIOD', '30x', '1s to 1h', '2m30s'),
    ],
    [
      { RECOVERY_GRACE_PERIOD: '-1s' },
      duration('RECOVERY_GRACE_PERIOD', '-1s', '1s to 1h', '2m30s'),
    ],
    [{ RECOVERY_GRACE_PERIOD: '30' }, duration('RECOVERY_GRACE_PERIOD', '30', '1s to 1h', '2m30s')],
    [{ RECOVERY_GRACE_PERIOD: '0s' }, duration('RECOVERY_GRACE_PERIOD', '0s', '1s to 1h', '2m30s')],
    [{ RECOVERY_GRACE_PERIOD: '0' }, duration('RECOVERY_GRACE_PERIOD', '0', '1s to 1h', '2m30s')],
    [
      { RECOVERY_GRACE_PERIOD: '1h1s' },
      duration('RECOVERY_GRACE_PERIOD', '1h1s', '1s to 1h', '2m30s'),
    ],
    [
      { RECOVERY_BACKOFF_INITIAL: '0' },
      duration('RECOVERY_BACKOFF_INITIAL', '0', '1s to 30m', '30s'),
    ],
    [
      { RECOVERY_BACKOFF_INITIAL: '31m' },
      duration('RECOVERY_BACKOFF_INITIAL', '31m', '1s to 30m', '30s'),
    ],
    [{ RECOVERY_EARLY_DETECTION: 'true' }, 'RECOVERY_EARLY_DETECTION="true": expected on or off'],
    [
      { RECOVERY_BACKOFF_MAX: '10s' },
      'RECOVERY_BACKOFF_MAX="10s": expected a duration not shorter than RECOVERY_BACKOFF_INITIAL (30s)',
    ],
    [
      { RECOVERY_BACKOFF_INITIAL: '5m' },
      'RECOVERY_BACKOFF_MAX="4m": expected a duration not shorter than RECOVERY_BACKOFF_INITIAL (5m)',
    ],
    [
      { RECOVERY_MAX_ATTEMPTS: '0' },
      'RECOVERY_MAX_ATTEMPTS="0": expected a whole number from 1 to 100',
    ],
    [
      { RECOVERY_MAX_ATTEMPTS: '101' },
      'RECOVERY_MAX_ATTEMPTS="101": expected a whole number from 1 to 100',
    ],
    [
      { RECOVERY_MAX_ATTEMPTS: '2.5' },
      'RECOVERY_MAX_ATTEMPTS="2.5": expected a whole number from 1 to 100',
    ],
    [
      { RECOVERY_MAX_ATTEMPTS: 'five' },
      'RECOVERY_MAX_ATTEMPTS="five": expected a whole number from 1 to 100',
    ],
    [
      { RECOVERY_MAX_ATTEMPTS: '-3' },
      'RECOVERY_MAX_ATTEMPTS="-3": expected a whole number from 1 to 100',
    ],
    [
      { RECOVERY_MODE: 'dry-run' },
      'RECOVERY_MODE="dry-run": expected one of enforce, observe, off',
    ],
  ])("rejects %j with the rule's message", (env, problem) => {
    expect(() => parseRecoveryConfig(env)).toThrow(ConfigError);
    expect(() => parseRecoveryConfig(env)).toThrow(`invalid recovery configuration: ${problem}`);
  });

  it('collects every problem into one error', () => {
    let caught: unknown;
    try {
      parseRecoveryConfig({
        RECOVERY_GRACE_PERIOD: 'soon',
        RECOVERY_BACKOFF_MAX: '4x',
        RECOVERY_MAX_ATTEMPTS: '0',
        RECOVERY_MODE: 'loud',
      });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const error = caught as ConfigError;
    expect(error.problems.map((p) => p.split('=')[0])).toEqual([
      'RECOVERY_GRACE_PERIOD',
      'RECOVERY_BACKOFF_MAX',
      'RECOVERY_MAX_ATTEMPTS',
      'RECOVERY_MODE',
    ]);
    for (const problem of error.problems) expect(error.message).toContain(problem);
  });

  it('returns a frozen config and does not touch the env', () => {
    const env = { RECOVERY_MODE: 'observe' };
    const cfg = parseRecoveryConfig(env);
    expect(Object.isFrozen(cfg)).toBe(true);
    expect(env).toEqual({ RECOVERY_MODE: 'observe' });
  });
});
