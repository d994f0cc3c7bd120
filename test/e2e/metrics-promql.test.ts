// End-to-end: the recovery as an operator's Prometheus sees it (issue 36). Every function pushes
// its metrics over OTLP to the Prometheus room (a real Prometheus, test/harness/prometheus/), as
// the standard OTEL_* variables tell it; after one AG that loses a Ready write once (forced,
// recovered) and one that loses them all (five forces, the verdict), the counts read back in
// PromQL equal the Kubernetes Events of the same run. The queries are the rules' and the
// dashboard's (test/support/monitoring-queries.ts).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getArtifactGenerator } from '../support/apiserver.js';
import { listEventsAbout, occurrences } from '../support/kube-events.js';
import { startPrometheus, type PrometheusRoom } from '../harness/prometheus/index.js';
import { E2E_QUERIES } from '../support/monitoring-queries.js';
import { MINUTE, createPair, kc, report, startSystem, type Pair } from './scenario-kit.js';

let prometheus: PrometheusRoom;

beforeAll(async () => {
  prometheus = await startPrometheus();
}, 90_000);

afterAll(async () => {
  await prometheus?.stop();
});

async function eventCount(pair: Pair, reason: string): Promise<number> {
  const ag = await getArtifactGenerator(pair.ref, kc);
  const events = await listEventsAbout(kc, pair.ref.namespace, {
    uid: ag.metadata?.uid ?? '',
    name: pair.name,
  });
  return events.filter((e) => e.reason === reason).reduce((n, e) => n + occurrences(e), 0);
}

const of = (query: string, pair: Pair): string => query.replaceAll('$name', pair.name);

describe('e2e: the recovery in PromQL', () => {
  it('forces, recoveries, verdicts and stalls in Prometheus equal the Events of the run', async () => {
    const system = await startSystem({
      env: {
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: prometheus.otlpMetricsUrl,
        // Only the deliveries' and the shutdown's flushes export: what the run did, nothing more.
        OTEL_METRIC_EXPORT_INTERVAL: '600000',
      },
    });
    const once = await createPair(system, { lose: { times: 1 }, prefix: 'prom-once' });
    const always = await createPair(system, { lose: {}, prefix: 'prom-always' });
    await system.runUntil(
      () =>
        system.progress.of(once.key).recoveries.length > 0 &&
        system.progress.of(always.key).stalledAt !== null,
      { maxVirtualMs: 14 * MINUTE, what: 'a recovery and SourceWatcherStalled' },
    );
    await system.advance(MINUTE);
    await system.stop(); // the functions shut down: their last flush

    const forcesOnce = await eventCount(once, 'SourceWatcherRecoveryForced');
    const forcesAlways = await eventCount(always, 'SourceWatcherRecoveryForced');
    expect(forcesOnce).toBe(1);
    expect(forcesAlways).toBe(5);
    expect(await prometheus.scalar(of(E2E_QUERIES.forcesOfAg, once))).toBe(forcesOnce);
    expect(await prometheus.scalar(of(E2E_QUERIES.forcesOfAg, always))).toBe(forcesAlways);
    const recovered = await eventCount(once, 'SourceWatcherRecovered');
    expect(recovered).toBe(1);
    expect(await prometheus.scalar(of(E2E_QUERIES.recoveriesOfAg, once))).toBe(recovered);
    expect(await prometheus.scalar(of(E2E_QUERIES.recoveriesOfAg, always))).toBe(0);
    const verdicts = await eventCount(always, 'SourceWatcherStalled');
    expect(verdicts).toBe(1);
    expect(await prometheus.scalar(of(E2E_QUERIES.verdictsOfAg, always))).toBe(verdicts);
    expect(await prometheus.scalar(of(E2E_QUERIES.verdictsOfAg, once))).toBe(0);
    // One stall each, found once (however many forces followed).
    expect(await prometheus.scalar(of(E2E_QUERIES.stallsOfAg, once))).toBe(1);
    expect(await prometheus.scalar(of(E2E_QUERIES.stallsOfAg, always))).toBe(1);
    // Every function's deliveries arrived, labelled by function and outcome (none dead-lettered).
    const deliveries = await prometheus.query(E2E_QUERIES.deliveriesByFunction);
    const fns = deliveries.map((s) => s.labels['function']).sort();
    expect(fns).toEqual(expect.arrayContaining(['detect', 'force-drift', 'surface-stalled']));
    expect(await prometheus.scalar(E2E_QUERIES.deadLettered)).toBe(0);
    // The stall histogram: one observation per recovery and per verdict of the run.
    const durations = await prometheus.query(E2E_QUERIES.stallDurationsByOutcome);
    const countOf = (outcome: string): number =>
      Number(durations.find((s) => s.labels['outcome'] === outcome)?.value ?? 0);
    expect(countOf('recovered')).toBe(recovered);
    expect(countOf('stalled')).toBe(verdicts);
    // No delivery of this run was refused (no forged owner, every sender trusted, no denial).
    expect(await prometheus.query(E2E_QUERIES.refusalsByReason)).toEqual([]);
    report('metrics: PromQL equals Events', {
      forces: forcesOnce + forcesAlways,
      recoveries: recovered,
      verdicts,
      deliverySeries: deliveries.length,
    });
  });
});
