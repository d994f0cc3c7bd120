// Observe mode under the observe overlay's reduced RBAC (issue 12, item 5). The recording proxy
// in front of the API server enforces each client's rules from knative/overlays/observe: a call
// no rule allows gets 403 Forbidden, as a real API server would answer. Observe mode must run
// clean: no call denied, no delivery failed, and it still decides, reports and arms its alarm.

import * as k8s from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ACTION_FORCE } from '../../shared/core/objects/cloudevent-types.js';
import { MERGE_PATCH } from '../support/apiserver.js';
import { AG_RESOURCE } from '../harness/knative/index.js';
import { CLIENTS } from '../support/rbac-calls.js';
import {
  MINUTE,
  createPair,
  psReady,
  readAg,
  readyCondition,
  report,
  startObserveSystem,
  trackingCleared,
} from './scenario-kit.js';

describe('e2e: observe mode under the observe overlay RBAC', () => {
  it('decides, reports and arms its alarm with no call denied and no delivery failed', async () => {
    // The time rule (early detection off) is what makes detect arm its alarm here: the signal would
    // ask for a force at the lost write itself, and in observe mode nothing follows that needs one.
    const system = await startObserveSystem({ logLevel: 'info' });
    const stuck = await createPair(system, { lose: {}, prefix: 'observed' });
    const healthy = await createPair(system, { prefix: 'healthy' });
    // The enforcement bites: as force-drift, a patch of an AG is refused.
    const asForceDrift = system.proxy.kubeConfig('force-drift').makeApiClient(k8s.CustomObjectsApi);
    const refused = await asForceDrift
      .patchNamespacedCustomObject(
        {
          ...AG_RESOURCE,
          ...healthy.ref,
          body: { metadata: { annotations: { probe: 'x' } } },
        },
        MERGE_PATCH,
      )
      .then(
        () => 'allowed',
        (e: unknown) => (e instanceof k8s.ApiException ? e.code : String(e)),
      );
    expect(refused).toBe(403);
    system.proxy.clearCalls();
    await system.advance(7 * MINUTE);

    // Clean: nothing denied, no 5xx or dead letter anywhere.
    const functionCalls = system.proxy.calls.filter((c) =>
      CLIENTS.some(([tag]) => tag === c.clientTag),
    );
    expect(functionCalls.length).toBeGreaterThan(0);
    expect(functionCalls.filter((c) => c.fault !== undefined).map((c) => c.path)).toEqual([]);
    const failed = system.knative.broker.deliveries.filter(
      (d) => d.status === undefined || d.status >= 300,
    );
    expect(failed.map((d) => `${d.trigger} ${d.status}`)).toEqual([]);
    expect(system.knative.broker.deadLetters).toEqual([]);

    // It decided and said so; detect programmed its alarm (the writes observe needs).
    expect(
      system.knative.broker.ingested.filter((r) => r.event.type === ACTION_FORCE).length,
    ).toBeGreaterThan(0);
    expect(system.logs.find('would force', 'force-drift').length).toBeGreaterThan(0);
    const wouldUpdate = system.logs.find('would update PackageSource Ready', 'surface-stalled');
    expect(wouldUpdate.map((r) => r['reason'])).toContain('AwaitingSourceWatcherRecovery');
    expect(
      system.proxy.count({ clientTag: 'detect', resource: 'pingsources', verb: 'create' }),
    ).toBeGreaterThan(0);

    // And wrote nothing to AGs or PackageSources.
    for (const pair of [stuck, healthy]) {
      const ag = await readAg(pair.ref);
      expect(trackingCleared(ag)).toBe(true);
      expect(readyCondition(ag)?.reason).not.toBe('SourceWatcherRecoveryForced');
    }
    expect(await psReady(stuck.name)).toBeUndefined();
    expect(
      system.writesBy(['force-drift', 'surface-stalled'], { resource: 'artifactgenerators' }),
    ).toEqual([]);

    report('observe under reduced RBAC', { calls: functionCalls.length });
  });
});
