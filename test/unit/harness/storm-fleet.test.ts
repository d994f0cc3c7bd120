// The storm fleet's plan (test/harness/storm-fleet.ts): roles and counts as asked, names unique
// and valid, bad sizes refused before anything is created; P9's size switch.

import { describe, expect, it } from 'vitest';
import { planStormFleet, type StormFleetOptions } from '../../harness/storm-fleet.js';
import { P9_FLEETS, p9Profiles, p9Size } from '../../bench/p9-storm.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

describe('storm fleet plan', () => {
  it.each(Object.entries(P9_FLEETS))('%s: the roles add up', (_size, fleet) => {
    const members = planStormFleet({ ...fleet, prefix: 'p9x' });
    const count = (role: string): number => members.filter((m) => m.role === role).length;
    expect(members).toHaveLength(fleet.pairs);
    expect(count('once')).toBe(fleet.once);
    expect(count('twice')).toBe(fleet.twice);
    expect(count('always') + count('always-honest-failure')).toBe(fleet.always);
    expect(count('always-honest-failure')).toBe(fleet.alwaysWithHonestFailure);
    expect(count('honest')).toBe(fleet.pairs - fleet.once - fleet.twice - fleet.always);
    expect(new Set(members.map((m) => m.key)).size).toBe(fleet.pairs);
    for (const m of members) {
      expect(m.name).toMatch(DNS_LABEL);
      expect(m.name.length).toBeLessThanOrEqual(63);
      expect(m.key).toBe(`cozy-system/${m.name}`);
    }
  });

  const bad: { what: string; o: Omit<StormFleetOptions, 'prefix'> }[] = [
    { what: 'more losing than pairs', o: { pairs: 3, once: 2, twice: 1, always: 1 } },
    { what: 'a negative count', o: { pairs: 3, once: -1, twice: 0, always: 0 } },
    { what: 'a fractional count', o: { pairs: 3.5, once: 0, twice: 0, always: 0 } },
    {
      what: 'more honest failures than always-losing',
      o: { pairs: 5, once: 0, twice: 0, always: 1, alwaysWithHonestFailure: 2 },
    },
  ];
  it.each(bad)('refuses $what', ({ o }) => {
    expect(() => planStormFleet({ ...o, prefix: 'x' })).toThrow(RangeError);
  });

  it('P9_SIZE: full by default, standard on request, anything else refused', () => {
    expect(p9Size(undefined)).toBe('full');
    expect(p9Size('')).toBe('full');
    expect(p9Size('standard')).toBe('standard');
    expect(() => p9Size('huge')).toThrow(/P9_SIZE/);
  });

  it.each<[string | undefined, string[]]>([
    [undefined, ['event-path']],
    ['event-path', ['event-path']],
    ['functions-only', ['functions-only']],
    ['both', ['event-path', 'functions-only']],
  ])('P9_PROFILES=%s runs %j', (value, profiles) => {
    expect(p9Profiles(value)).toEqual(profiles);
  });

  it('P9_PROFILES: anything else refused', () => {
    expect(() => p9Profiles('kind')).toThrow(/P9_PROFILES/);
  });
});
