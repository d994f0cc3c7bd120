// End-to-end: the recovery as an operator's Prometheus sees it (issue 36). Every function pushes
// its metrics over OTLP to the Prometheus room (a real Prometheus, test/harness/prometheus/), as
// the standard OTEL_* variables tell it, with sender authentication on as
// knative/overlays/sender-auth ships it (docs/adr/0056). One AG loses a Ready write once (forced,
// recovered), one loses them all (five forces, the verdict); the run also provokes refusals: two
// deliveries posted straight to the functions over real HTTP, one with no token and one with a
// real token of an identity no function hears, a tenant's AG naming a platform PackageSource as
// its controller (docs/adr/0053), and a PackageSource whose status an operator's admission policy
// denies until the operator lifts it (the Broker redelivers on the virtual clock, at Knative's
// schedule). The counts read back in PromQL equal the Kubernetes Events of the same run, the
// refusals provoked and the denials the API server answered; no other refusal reason appears. The queries are
// the rules' and the dashboard's (test/support/monitoring-queries.ts): every one is evaluated.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTION_FORCE } from '../../shared/core/objects/cloudevent-types.js';
import { getArtifactGenerator } from '../support/apiserver.js';
import { actionEvent, agResourceEvent } from '../support/http-events.js';
import { listEventsAbout, occurrences } from '../support/kube-events.js';
import { startPrometheus, type PrometheusRoom, type Sample } from '../harness/prometheus/index.js';
import { E2E_QUERIES, type E2eQuery } from '../support/monitoring-queries.js';
import {
  createForgedOwnerAg,
  createFrozenPair,
  deliverDirectly,
  installFreezePolicy,
  intruderToken,
  unfreeze,
} from './refusals.js';
import {
  MINUTE,
  createPair,
  kc,
  report,
  senderAuthSystem,
  startSystem,
  type Pair,
} from './scenario-kit.js';

let prometheus: PrometheusRoom;
let removeFreezePolicy: (() => Promise<void>) | undefined;

beforeAll(async () => {
  prometheus = await startPrometheus();
}, 90_000);

afterAll(async () => {
  await removeFreezePolicy?.();
  await prometheus?.stop();
});

async function eventCount(ref: Pair['ref'], reason: string): Promise<number> {
  const ag = await getArtifactGenerator(ref, kc);
  const events = await listEventsAbout(kc, ref.namespace, {
    uid: ag.metadata?.uid ?? '',
    name: ref.name,
  });
  return events.filter((e) => e.reason === reason).reduce((n, e) => n + occurrences(e), 0);
}

/** The queries of E2E_QUERIES evaluated so far: the check ends by asking that it is all of them. */
const evaluated = new Set<E2eQuery>();
const promql = (q: E2eQuery, pair?: Pair): string => {
  evaluated.add(q);
  return pair === undefined ? E2E_QUERIES[q] : E2E_QUERIES[q].replaceAll('$name', pair.name);
};
const scalar = (q: E2eQuery, pair?: Pair): Promise<number> => prometheus.scalar(promql(q, pair));
const vector = (q: E2eQuery, pair?: Pair): Promise<Sample[]> => prometheus.query(promql(q, pair));
const byLabels = (samples: Sample[], ...keys: string[]): Record<string, number> =>
  Object.fromEntries(samples.map((s) => [keys.map((k) => s.labels[k] ?? '').join(' '), s.value]));

describe('e2e: the recovery in PromQL', () => {
  it('forces, recoveries, verdicts, stalls and refusals in Prometheus equal the Events and the refusals of the run', async () => {
    const auth = senderAuthSystem();
    const system = await startSystem({
      ...auth,
      // Redeliveries wait on the virtual clock: a denied write is retried only as time moves.
      broker: { retryOn: 'clock' },
      env: {
        ...auth.env,
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: prometheus.otlpMetricsUrl,
        // Only the deliveries' and the shutdown's flushes export: what the run did, nothing more.
        OTEL_METRIC_EXPORT_INTERVAL: '600000',
      },
    });
    const once = await createPair(system, { lose: { times: 1 }, prefix: 'prom-once' });
    const always = await createPair(system, { lose: {}, prefix: 'prom-always' });
    // A tenant's healthy AG claiming once's PackageSource: surface-stalled refuses the owner on
    // every event about it (a warn line, a PackageSourceOwnerRefused Event, the counter).
    const forged = await createForgedOwnerAg('tenant-prom', once.name);

    // Deliveries that no Trigger sent, over real HTTP to the functions: refused before anything
    // is read (a forged force action among them: it forces nothing).
    const onceAg = await getArtifactGenerator(once.ref, kc);
    const unauthenticated = [
      await deliverDirectly(system, 'detect', agResourceEvent(onceAg)),
      await deliverDirectly(
        system,
        'force-drift',
        actionEvent(ACTION_FORCE, onceAg, 0, system.clock.now()),
        await intruderToken(system, 'force-drift'),
      ),
    ];
    expect(unauthenticated.map((d) => [d.fn, d.status, d.body])).toEqual([
      ['detect', 401, { error: 'missing token' }],
      ['force-drift', 403, { error: 'sender not allowed' }],
    ]);

    // An operator's policy denies every status write to a frozen PackageSource: surface-stalled's
    // first Ready for a healthy AG is denied (500, redelivered) until the freeze is lifted.
    removeFreezePolicy = await installFreezePolicy();
    const frozen = await createFrozenPair(once.ref.namespace);
    const denials = () =>
      system.proxy
        .callsMatching({
          clientTag: 'surface-stalled',
          resource: 'packagesources',
          subresource: 'status',
          name: frozen.name,
        })
        .filter((c) => c.status === 403);
    await system.runUntil(() => denials().length > 0, {
      maxVirtualMs: MINUTE,
      what: "the frozen PackageSource's status write denied",
    });
    await unfreeze(frozen.name);
    const frozenReady = () =>
      system.progress.packageSourceVersions(frozen.name).some((v) => v.status === 'True');

    await system.runUntil(
      () =>
        system.progress.of(once.key).recoveries.length > 0 &&
        system.progress.of(always.key).stalledAt !== null &&
        frozenReady(),
      { maxVirtualMs: 14 * MINUTE, what: 'a recovery, SourceWatcherStalled and the frozen Ready' },
    );
    await system.advance(MINUTE);
    await system.stop(); // the functions shut down: their last flush

    const forcesOnce = await eventCount(once.ref, 'SourceWatcherRecoveryForced');
    const forcesAlways = await eventCount(always.ref, 'SourceWatcherRecoveryForced');
    expect(forcesOnce).toBe(1);
    expect(forcesAlways).toBe(5);
    expect(await scalar('forcesOfAg', once)).toBe(forcesOnce);
    expect(await scalar('forcesOfAg', always)).toBe(forcesAlways);
    const recovered = await eventCount(once.ref, 'SourceWatcherRecovered');
    expect(recovered).toBe(1);
    expect(await scalar('recoveriesOfAg', once)).toBe(recovered);
    expect(await scalar('recoveriesOfAg', always)).toBe(0);
    const verdicts = await eventCount(always.ref, 'SourceWatcherStalled');
    expect(verdicts).toBe(1);
    expect(await scalar('verdictsOfAg', always)).toBe(verdicts);
    expect(await scalar('verdictsOfAg', once)).toBe(0);
    // One stall each, found once (however many forces followed).
    expect(await scalar('stallsOfAg', once)).toBe(1);
    expect(await scalar('stallsOfAg', always)).toBe(1);
    // Every function's deliveries arrived, labelled by function and outcome (none dead-lettered).
    const deliveries = await vector('deliveriesByFunction');
    const fns = deliveries.map((s) => s.labels['function']).sort();
    expect(fns).toEqual(expect.arrayContaining(['detect', 'force-drift', 'surface-stalled']));
    expect(await scalar('deadLettered')).toBe(0);
    // The stall histogram: one observation per recovery and per verdict of the run.
    const durations = byLabels(await vector('stallDurationsByOutcome'), 'outcome');
    expect(durations).toEqual({ recovered, stalled: verdicts });
    // The lost write -> first force histogram: one observation per stall the lost-write signal
    // found (a first force, verified), none for a repeat force; on the virtual clock each within
    // the first bucket (early detection's target is 3 s).
    const stalls = [...(await vector('stallsOfAg', once)), ...(await vector('stallsOfAg', always))];
    const signalled = stalls
      .filter((s) => s.labels['how'] === 'lost-write')
      .reduce((n, s) => n + s.value, 0);
    // Both stalls leave the signal (early detection is on by default): two first forces.
    expect(signalled).toBe(2);
    const buckets = byLabels(await vector('lostWriteToForceBuckets'), 'le');
    expect(buckets['+Inf'] ?? 0).toBe(signalled);
    expect(buckets['3'] ?? 0).toBe(signalled);

    // The refusals: the two deliveries provoked, both as unauthenticated; every forged-owner
    // refusal surface-stalled reported with an Event on the tenant's AG; every write of the frozen
    // PackageSource the API server denied (the redelivery after the freeze went through); no
    // other reason, no other function. No delivery the Broker made was refused.
    const brokerRefused = system.knative.broker.deliveries.filter(
      (d) => d.status === 401 || d.status === 403,
    );
    expect(brokerRefused).toEqual([]);
    const ownerRefusedEvents = await eventCount(forged.ref, 'PackageSourceOwnerRefused');
    expect(ownerRefusedEvents).toBeGreaterThanOrEqual(1);
    const denied = denials();
    expect(denied.length).toBeGreaterThanOrEqual(1);
    expect(denied.every((c) => c.upstreamStatus === 403)).toBe(true);
    const refusals = byLabels(await vector('refusalsByReason'), 'function', 'reason');
    expect(refusals).toEqual({
      'detect unauthenticated': 1,
      'force-drift unauthenticated': 1,
      'surface-stalled forged-owner': ownerRefusedEvents,
      'surface-stalled policy-denied': denied.length,
    });

    // Every query the dashboard may show from this check was evaluated against the room.
    expect([...evaluated].sort()).toEqual(Object.keys(E2E_QUERIES).sort());
    report('metrics: PromQL equals Events', {
      forces: forcesOnce + forcesAlways,
      recoveries: recovered,
      verdicts,
      lostWriteObserved: buckets['+Inf'] ?? 0,
      refusedUnauthenticated: unauthenticated.length,
      refusedForgedOwner: ownerRefusedEvents,
      refusedPolicyDenied: denied.length,
      deliverySeries: deliveries.length,
    });
  });
});
