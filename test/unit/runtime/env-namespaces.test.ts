// RECOVERY_NAMESPACES (knative/overlays/scoped): absent means every namespace; a list of names is
// taken (trimmed, duplicates dropped); anything else fails the start with the variable named.

import { describe, expect, it } from 'vitest';
import { loadPodConfig } from '../../support/pod-config.js';

const load = (value?: string) =>
  loadPodConfig({ ...(value !== undefined ? { RECOVERY_NAMESPACES: value } : {}) });

describe('RECOVERY_NAMESPACES', () => {
  it.each([
    [undefined, undefined],
    ['', undefined],
    ['cozy-system', ['cozy-system']],
    ['cozy-system, flux-apps', ['cozy-system', 'flux-apps']],
    ['a,b,a', ['a', 'b']],
  ])('%j -> %j', (value, expected) => {
    expect(load(value).namespaces).toEqual(expected);
  });

  it.each(['cozy-system,', 'Cozy', 'a,,b', 'a b', 'x/y'])('%j is refused', (value) => {
    expect(() => load(value)).toThrow(
      /RECOVERY_NAMESPACES=".*": expected at most 64 namespace names/,
    );
  });
});
