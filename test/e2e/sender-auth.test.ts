// End-to-end with sender authentication on (docs/adr/0056): Eventing's authentication-oidc as
// the Knative emulation plays it (a real TokenRequest token of each Trigger's Eventing-named
// identity on every delivery, for the subscriber's audience the Triggers in knative/ name), the
// functions configured as knative/overlays/sender-auth ships them (RECOVERY_AUTH=oidc, each
// Service's RECOVERY_AUTH_SENDERS), checking every token by TokenReview as their own
// ServiceAccounts. A lost Ready write is forced, rebuilt and reported, and no delivery is refused.

import { describe, expect, it } from 'vitest';
import {
  MINUTE,
  createPair,
  readAg,
  readPackageSource,
  readyCondition,
  report,
  senderAuthConfigData,
  senderAuthSystem,
  startSystem,
  trackingCleared,
} from './scenario-kit.js';

describe('e2e: sender authentication on', () => {
  it('a lost Ready write is recovered with every delivery authenticated, one TokenReview per token', async () => {
    expect(senderAuthConfigData()?.['RECOVERY_AUTH']).toBe('oidc');
    const system = await startSystem(senderAuthSystem());
    const pair = await createPair(system, { lose: { times: 1 } });

    await system.runUntil(() => system.progress.of(pair.key).recoveries.length > 0, {
      maxVirtualMs: 3 * MINUTE,
      what: 'recovery',
    });
    await system.runUntil(
      async () => readyCondition(await readPackageSource(pair.name))?.status === 'True',
      { maxVirtualMs: MINUTE, what: 'PackageSource Ready' },
    );

    const p = system.progress.of(pair.key);
    expect(p.forces.map((f) => f.attempt)).toEqual([1]);
    const ag = await readAg(pair.ref);
    expect(readyCondition(ag)).toMatchObject({ status: 'True', reason: 'Succeeded' });
    expect(trackingCleared(ag)).toBe(true);

    // Every delivery carried a token the function accepted: none was refused as a sender.
    const broker = system.knative.broker;
    const refused = broker.deliveries.filter((d) => d.status === 401 || d.status === 403);
    expect(refused).toEqual([]);
    const served = new Set(
      broker.deliveries.filter((d) => d.outcome === 'delivered').map((d) => d.subscriber),
    );
    expect([...served]).toEqual(
      expect.arrayContaining(['detect', 'force-drift', 'surface-stalled']),
    );
    expect(system.knative.tokens?.requests ?? 0).toBeGreaterThan(0);

    // Each function asked the API server once per token it was sent (the verdict is cached for
    // the token's life), however many deliveries carried it.
    for (const fn of ['detect', 'force-drift', 'surface-stalled'] as const) {
      const reviews = system.proxy.callsMatching({ clientTag: fn, resource: 'tokenreviews' });
      const to = broker.deliveries.filter((d) => d.subscriber === fn);
      expect(
        to.every((d) => d.token !== undefined),
        fn,
      ).toBe(true);
      const tokensSent = new Set(to.map((d) => d.token));
      const deliveries = to.length;
      expect(reviews.length, fn).toBe(tokensSent.size);
      expect(deliveries, fn).toBeGreaterThanOrEqual(tokensSent.size);
      expect(
        reviews.every((c) => c.status === 201),
        fn,
      ).toBe(true);
      report(`sender-auth ${fn}`, { deliveries, tokenReviews: reviews.length });
    }
  });
});
