// The rules table (shared/core/config/rules.ts) and its checker: every good value reads as
// expected, every bad one gives the rule's one line; the loaders' defaults are the table's.

import { describe, expect, it } from 'vitest';
import {
  CONFIG_RULES,
  DEFAULT_PACKAGESOURCE_AG_NAMESPACES,
  DEFAULT_RECOVERY_CONFIG,
  MAX_ATTEMPTS_LIMIT,
  MAX_PACKAGESOURCE_AG_NAMESPACES,
  RECOVERY_MODES,
  checkSetting,
  parseDuration,
  parseRecoveryConfig,
  ruleOf,
  shownValue,
} from '../../../shared/core/index.js';
import {
  DEFAULT_DELIVERY_TIMEOUT_SECONDS,
  DEFAULT_SWEEP_BUDGET_MS,
  DEFAULT_SWEEP_PAGE_SIZE,
  LOG_LEVELS,
} from '../../../shared/runtime/env.js';
import { loadPodConfig } from '../../support/pod-config.js';
import { BAD_VALUES, GOOD_VALUES, badLine } from '../../support/config-values.js';

describe('config rules', () => {
  it.each(GOOD_VALUES)('%s=%j is accepted', (key, value, expected) => {
    const result = checkSetting(ruleOf(key), value);
    expect(result).toMatchObject({ ok: true, value: expected });
  });

  it.each(BAD_VALUES)('%s=%j is refused with its rule line', (key, value, expected) => {
    expect(checkSetting(ruleOf(key), value)).toEqual({
      ok: false,
      problem: badLine(key, shownValue(value), expected),
    });
  });

  it.each(BAD_VALUES)('loadConfig refuses %s=%j with the same line', (key, value, expected) => {
    let problems: readonly string[] = [];
    try {
      loadPodConfig({ [key]: value });
    } catch (e) {
      problems = (e as { problems: readonly string[] }).problems;
    }
    expect(problems).toEqual([badLine(key, shownValue(value), expected)]);
  });

  it('gives every setting a good and a bad example in the shared table', () => {
    for (const rule of CONFIG_RULES) {
      expect(GOOD_VALUES.some(([k]) => k === rule.key)).toBe(true);
      expect(BAD_VALUES.some(([k]) => k === rule.key)).toBe(true);
    }
  });

  it('every duration has a range that excludes zero, and every default is accepted', () => {
    for (const rule of CONFIG_RULES) {
      if (rule.kind === 'duration') {
        expect(rule.minMs).toBeGreaterThan(0);
        expect(rule.maxMs).toBeGreaterThan(rule.minMs);
        expect(checkSetting(rule, '0s').ok).toBe(false);
      }
      if (rule.default !== undefined) expect(checkSetting(rule, rule.default).ok).toBe(true);
      expect(checkSetting(rule, '').ok).toBe(true);
    }
  });

  it("the recovery defaults are the table's", () => {
    expect(parseRecoveryConfig({})).toEqual(DEFAULT_RECOVERY_CONFIG);
    expect(DEFAULT_RECOVERY_CONFIG.gracePeriodMs).toBe(
      parseDuration(ruleOf('RECOVERY_GRACE_PERIOD').default ?? ''),
    );
  });

  it("the loaders' named constants are the table's", () => {
    const rule = (key: string) => ruleOf(key) as unknown as Record<string, unknown>;
    expect(rule('RECOVERY_MODE').values).toEqual(RECOVERY_MODES);
    expect(rule('LOG_LEVEL').values).toEqual(LOG_LEVELS);
    expect(rule('RECOVERY_MAX_ATTEMPTS').max).toBe(MAX_ATTEMPTS_LIMIT);
    expect(rule('RECOVERY_PACKAGESOURCE_AG_NAMESPACES').maxItems).toBe(
      MAX_PACKAGESOURCE_AG_NAMESPACES,
    );
    expect(rule('RECOVERY_PACKAGESOURCE_AG_NAMESPACES').default).toBe(
      DEFAULT_PACKAGESOURCE_AG_NAMESPACES.join(','),
    );
    expect(rule('SWEEP_BUDGET_MS').default).toBe(String(DEFAULT_SWEEP_BUDGET_MS));
    expect(rule('SWEEP_PAGE_SIZE').default).toBe(String(DEFAULT_SWEEP_PAGE_SIZE));
    expect(rule('DELIVERY_TIMEOUT_SECONDS').default).toBe(String(DEFAULT_DELIVERY_TIMEOUT_SECONDS));
  });

  it('every enum is read in any letter case, the same way for each', () => {
    for (const rule of CONFIG_RULES) {
      if (rule.kind !== 'enum') continue;
      for (const v of rule.values) {
        expect(checkSetting(rule, v.toUpperCase())).toMatchObject({ ok: true, value: v });
      }
    }
  });

  it('shows a long value cut at 64 code points and a line break as a space', () => {
    expect(shownValue(`${'é'.repeat(70)}`)).toBe(`${'é'.repeat(64)}…`);
    expect(shownValue('a\nb')).toBe('a b');
  });
});
