// RECOVERY_PACKAGESOURCE_AG_NAMESPACES (docs/adr/0053): where genuine PackageSource AGs live.

import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  DEFAULT_PACKAGESOURCE_AG_NAMESPACES,
  ENV_PACKAGESOURCE_AG_NAMESPACES,
  MAX_PACKAGESOURCE_AG_NAMESPACES,
  parsePackageSourceAgNamespaces,
  shownValue,
} from '../../../shared/core/index.js';
import { loadPodConfig } from '../../support/pod-config.js';

const KEY = ENV_PACKAGESOURCE_AG_NAMESPACES;

describe('parsePackageSourceAgNamespaces', () => {
  it.each<[string, string | undefined, readonly string[]]>([
    ['unset: cozy-system, where cozystack puts them', undefined, ['cozy-system']],
    ['empty', '', ['cozy-system']],
    ['blank', '  ', ['cozy-system']],
    ['one', 'packages', ['packages']],
    [
      'a list, spaces ignored',
      'cozy-system, packages ,extra',
      ['cozy-system', 'packages', 'extra'],
    ],
    ['repeats dropped', 'cozy-system,cozy-system', ['cozy-system']],
  ])('%s', (_label, raw, expected) => {
    const env = raw === undefined ? {} : { [KEY]: raw };
    const got = parsePackageSourceAgNamespaces(env);
    expect(got).toEqual(expected);
    expect(Object.isFrozen(got)).toBe(true);
  });

  // One message for every bad list: the rule's (shared/core/config/rules.ts), as the admission
  // policy on recovery-config gives it.
  it.each<[string, string]>([
    ['an empty entry', 'cozy-system,'],
    ['an empty entry inside', 'a,,b'],
    ['an upper-case name', 'Cozy-System'],
    ['a wildcard', '*'],
    ['a dotted name (no namespace has one)', 'cozy.system'],
    ['a 64-character name', 'a'.repeat(64)],
    [
      'too many',
      Array.from({ length: MAX_PACKAGESOURCE_AG_NAMESPACES + 1 }, (_, i) => `ns-${i}`).join(','),
    ],
  ])('refuses %s with a message naming the variable', (_label, raw) => {
    let caught: unknown;
    try {
      parsePackageSourceAgNamespaces({ [KEY]: raw });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).problems).toEqual([
      `${KEY}="${shownValue(raw)}": expected at most ${MAX_PACKAGESOURCE_AG_NAMESPACES} namespace ` +
        'names (DNS-1123 labels) separated by commas, such as cozy-system',
    ]);
  });

  it('the default is frozen', () => {
    expect(Object.isFrozen(DEFAULT_PACKAGESOURCE_AG_NAMESPACES)).toBe(true);
  });
});

describe('loadConfig: packageSourceOwners', () => {
  it('defaults to cozy-system and takes a list', () => {
    expect(loadPodConfig({}).packageSourceOwners).toEqual({ agNamespaces: ['cozy-system'] });
    expect(loadPodConfig({ [KEY]: 'a,b' }).packageSourceOwners).toEqual({
      agNamespaces: ['a', 'b'],
    });
  });

  it('fails fast on a bad list, with every other problem', () => {
    expect(() => loadPodConfig({ [KEY]: 'a,,b', PORT: 'x' })).toThrow(
      new RegExp(`PORT="x".*${KEY}="a,,b": expected at most`),
    );
  });
});
