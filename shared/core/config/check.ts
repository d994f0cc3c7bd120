// Reads one setting of recovery-config by its rule (rules.ts). Pure: the caller passes
// the environment in. The admission policy's CEL (config-policy-cel.ts) implements the same checks.

import { parseDuration } from '../codecs/duration.js';
import { isDns1123Label } from '../codecs/names.js';
import { problemOf, ruleOf, type SettingRule } from './rules.js';

/** What a setting reads as: milliseconds, a number, a lower-case word, a name or a list. */
export type SettingValue = number | string | readonly string[];

export type SettingResult =
  | { readonly ok: true; readonly value: SettingValue | undefined; readonly raw: string }
  | { readonly ok: false; readonly problem: string };

/** The shape of a duration (Go's, no sign); the policy's CEL uses the same expression. */
export const DURATION_SHAPE = '^(0|(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$';
/** A whole number as the rules accept it: digits only, at most 16. */
export const INTEGER_SHAPE = '^[0-9]{1,16}$';
const DURATION_RE = new RegExp(DURATION_SHAPE, 'u');
const INTEGER_RE = new RegExp(INTEGER_SHAPE);

/** Lower-cases A–Z only, as CEL's lowerAscii does. */
export function lowerAscii(value: string): string {
  return value.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/**
 * Checks a raw value against its rule. Surrounding spaces are ignored; unset or empty means the
 * rule's default (or, with none, an absent setting: value undefined).
 */
export function checkSetting(rule: SettingRule, rawValue: string | undefined): SettingResult {
  const trimmed = (rawValue ?? '').trim();
  const text = trimmed === '' ? rule.default : trimmed;
  if (text === undefined) return { ok: true, value: undefined, raw: '' };
  const value = valueOf(rule, text);
  return value === undefined
    ? { ok: false, problem: problemOf(rule, text) }
    : { ok: true, value, raw: text };
}

function valueOf(rule: SettingRule, text: string): SettingValue | undefined {
  switch (rule.kind) {
    case 'duration': {
      if (!DURATION_RE.test(text)) return undefined;
      let ms: number;
      try {
        ms = parseDuration(text);
      } catch {
        return undefined;
      }
      return ms >= rule.minMs && ms <= rule.maxMs ? ms : undefined;
    }
    case 'integer': {
      if (!INTEGER_RE.test(text)) return undefined;
      const n = Number(text);
      return n >= rule.min && n <= rule.max ? n : undefined;
    }
    case 'enum': {
      const word = lowerAscii(text);
      return rule.values.includes(word) ? word : undefined;
    }
    case 'name':
      return isDns1123Label(text) ? text : undefined;
    case 'namespaces': {
      const entries = text.split(',').map((e) => e.trim());
      if (entries.length > rule.maxItems || !entries.every(isDns1123Label)) return undefined;
      return Object.freeze([...new Set(entries)]);
    }
  }
}

/**
 * Reads every key of `keys` from env by its rule; problems collected in order.
 * `values[key]` is set for each good key.
 */
export function readSettings(
  env: Readonly<Record<string, string | undefined>>,
  keys: readonly string[],
): { values: Map<string, SettingValue | undefined>; raw: Map<string, string>; problems: string[] } {
  const values = new Map<string, SettingValue | undefined>();
  const raw = new Map<string, string>();
  const problems: string[] = [];
  for (const key of keys) {
    const result = checkSetting(ruleOf(key), env[key]);
    if (result.ok) {
      values.set(key, result.value);
      raw.set(key, result.raw);
    } else problems.push(result.problem);
  }
  return { values, raw, problems };
}
