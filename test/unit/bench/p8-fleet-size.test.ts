import { describe, expect, it } from 'vitest';
import { FLEETS, fleetSize } from '../../bench/p8-early-detection.js';

describe('P8_SIZE', () => {
  it.each([
    [undefined, 'standard'],
    ['', 'standard'],
    ['standard', 'standard'],
    ['full', 'full'],
  ] as const)('%j selects the %s fleet', (value, size) => {
    expect(fleetSize(value)).toBe(size);
  });

  it.each(['Full', 'large', ' full', '1'])('refuses %j with the choices', (value) => {
    expect(() => fleetSize(value)).toThrow(/P8_SIZE must be "standard" or "full"/);
  });

  it('keeps issue 13 bar in the full fleet: 300 honest rebuilds and 50 stalls', () => {
    const full = FLEETS.full;
    expect(full.honest * full.rounds).toBe(300);
    expect(full.firstBuildStalls + full.rebuildStalls).toBe(50);
    expect(FLEETS.standard.honest * FLEETS.standard.rounds).toBeLessThan(300);
  });
});
