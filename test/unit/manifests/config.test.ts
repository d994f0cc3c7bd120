// The ConfigMap in each render is a configuration the functions accept: it goes through the same
// loader the functions run at start-up (shared/runtime/env.ts), with no error.

import { describe, expect, it } from 'vitest';
import { loadPodConfig } from '../../support/pod-config.js';
import { renderKustomize } from '../../support/manifests.js';
import { DOCUMENTED_RECOVERY_DEFAULTS } from '../recovery-defaults.js';
import { BASE, FLUX_ONLY, OBSERVE, recoveryConfig } from './renders.js';

describe.each([
  [BASE, 'enforce'],
  [OBSERVE, 'observe'],
  [FLUX_ONLY, 'enforce'],
])('%s: recovery-config', (render, mode) => {
  it(`loads as the functions load it (mode ${mode})`, () => {
    const data = recoveryConfig(renderKustomize(render));
    const config = loadPodConfig({ ...data, PORT: '8080' });
    // The shipped settings are the documented defaults, in the render's mode.
    expect(config.recovery).toEqual({ ...DOCUMENTED_RECOVERY_DEFAULTS, mode });
    expect(config.alarm).toEqual({
      namespace: 'source-watcher-recovery',
      name: 'recovery-alarm',
      sinkBroker: 'default',
    });
    expect(config.resyncPingSource).toBe('resync');
    expect(config.logLevel).toBe('info');
    expect(config.packageSourceOwners).toEqual({ agNamespaces: ['cozy-system'] });
  });
});
