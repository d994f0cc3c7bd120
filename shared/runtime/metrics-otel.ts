// The metrics port on OpenTelemetry's SDK, pushed over OTLP/HTTP (docs/adr/0059-otlp-metrics.md).
// Imported only when an endpoint is configured (metrics-start.ts): a function without one never
// loads the SDK. Cumulative temporality (what Prometheus's OTLP receiver takes as is). The names
// follow OpenTelemetry's conventions; after Prometheus's translation they read
// source_watcher_recovery_<name>_total (counters) and ..._seconds_bucket (histograms): the list is
// in docs/operations.md, "Monitoring".

import { randomUUID } from 'node:crypto';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import type { Logger } from './logger.js';
import {
  attemptLabel,
  degradedCauseLabel,
  errorClassLabel,
  type DeliveryOutcome,
  type Metrics,
} from './metrics.js';
import type { MetricsExportConfig } from './metrics-config.js';

export const METER_NAME = 'source-watcher-recovery';
export const METRIC_PREFIX = 'source_watcher_recovery';

/** Seconds: from a lost write to its force (early detection aims at < 3 s), and a stall's length. */
const FORCE_BUCKETS = [0.5, 1, 2, 3, 5, 10, 30, 60, 150, 300];
const STALL_BUCKETS = [30, 60, 120, 240, 480, 720, 900, 1800, 3600];
/** A delivery's export waits this long, gathering the deliveries that end meanwhile. */
export const FLUSH_DELAY_MS = 1000;

export function createOtelMetrics(fn: string, cfg: MetricsExportConfig, logger: Logger): Metrics {
  const exporter = new OTLPMetricExporter({
    url: cfg.url,
    headers: { ...cfg.headers },
    timeoutMillis: cfg.timeoutMs,
  });
  const reader = new PeriodicExportingMetricReader({
    exporter,
    exportIntervalMillis: cfg.intervalMs,
    exportTimeoutMillis: Math.min(cfg.timeoutMs, cfg.intervalMs),
  });
  const provider = new MeterProvider({
    resource: resourceFromAttributes({
      // One series per pod (Prometheus's `instance`): pods of one function never write the same
      // cumulative series; the rules count a pod's series from zero (docs/operations.md).
      'service.instance.id': randomUUID(),
      ...cfg.resourceAttributes,
      'service.name': cfg.serviceName ?? fn,
      'service.namespace': 'source-watcher-recovery',
    }),
    readers: [reader],
  });
  const meter = provider.getMeter(METER_NAME);
  const p = METRIC_PREFIX;
  const stalls = meter.createCounter(`${p}.stalls`, {
    description: 'Stalls found, by how: the lost-write signal or the time rule',
  });
  const forces = meter.createCounter(`${p}.forces`, { description: 'Forces written, by attempt' });
  const recoveries = meter.createCounter(`${p}.recoveries`, {
    description: 'Tracked ArtifactGenerators Ready again',
  });
  const verdicts = meter.createCounter(`${p}.verdicts`, {
    description: 'Verdicts SourceWatcherStalled surfaced on the PackageSource',
  });
  const heals = meter.createCounter(`${p}.external_artifact.heals`, {
    description: 'ExternalArtifact drifts healed',
  });
  const refusals = meter.createCounter(`${p}.refusals`, {
    description: 'Deliveries refused, by reason',
  });
  const degraded = meter.createCounter(`${p}.early_detection.degraded`, {
    description: 'Times early detection could not run, by cause',
  });
  const apiErrors = meter.createCounter(`${p}.api.errors`, {
    description: 'Kubernetes API calls failed, by error class',
  });
  // Every delivery ends in one: counted in a plain tally and read by the SDK at each collection
  // (an observable counter of the running totals: under cumulative temporality the same series
  // as a counter's). An SDK add() per delivery cost about a fifth of a no-op delivery's CPU
  // (bench P3, metrics on vs off; docs/adr/0069).
  const fnLabel = { function: fn };
  const deliveryCounts = new Map<DeliveryOutcome, number>();
  meter
    .createObservableCounter(`${p}.deliveries`, {
      description: 'CloudEvent deliveries handled, by function and outcome',
    })
    .addCallback((result) => {
      for (const [outcome, n] of deliveryCounts) result.observe(n, { ...fnLabel, outcome });
    });
  const owedEvents = meter.createCounter(`${p}.owed_events`, {
    description: 'Kubernetes Events that could not be written at first, by what became of them',
  });
  const lostWriteToForce = meter.createHistogram(`${p}.lost_write_to_force.duration`, {
    description: 'From the lost write to the first force written for it',
    unit: 's',
    advice: { explicitBucketBoundaries: FORCE_BUCKETS },
  });
  const stallDuration = meter.createHistogram(`${p}.stall.duration`, {
    description: 'From the first force to the outcome (recovered or stalled)',
    unit: 's',
    advice: { explicitBucketBoundaries: STALL_BUCKETS },
  });

  const exportNow = async (): Promise<void> => {
    try {
      await provider.forceFlush();
    } catch (e) {
      logger.warn(
        { err: { message: e instanceof Error ? e.message : String(e) } },
        'metrics export failed',
      );
    }
  };
  /**
   * A delivery's flush: one export FLUSH_DELAY_MS after the first delivery that asks, for all
   * that ask meanwhile (under load: one export a second, not one per event).
   */
  let pending: Promise<void> | undefined;
  const flush = (): Promise<void> => {
    pending ??= new Promise<void>((done) => {
      const timer = setTimeout(() => {
        pending = undefined;
        void exportNow().then(done);
      }, FLUSH_DELAY_MS);
      // SIGTERM's shutdown exports what is left: the timer need not hold the process.
      timer.unref();
    });
    return pending;
  };

  return {
    stallFound: (ag, how) => stalls.add(1, { namespace: ag.namespace, name: ag.name, how }),
    forced: (ag, attempt) =>
      forces.add(1, { namespace: ag.namespace, name: ag.name, attempt: attemptLabel(attempt) }),
    recovered: (ag, seconds) => {
      recoveries.add(1, { namespace: ag.namespace, name: ag.name });
      if (seconds !== undefined && seconds >= 0)
        stallDuration.record(seconds, { outcome: 'recovered' });
    },
    verdict: (ag, seconds) => {
      verdicts.add(1, { namespace: ag.namespace, name: ag.name, reason: 'SourceWatcherStalled' });
      if (seconds !== undefined && seconds >= 0)
        stallDuration.record(seconds, { outcome: 'stalled' });
    },
    externalArtifactHealed: (ag) => heals.add(1, { namespace: ag.namespace, name: ag.name }),
    refused: (reason) => refusals.add(1, { ...fnLabel, reason }),
    lostWriteToForce: (seconds) => {
      if (seconds >= 0) lostWriteToForce.record(seconds);
    },
    earlyDetectionDegraded: (cause) => degraded.add(1, { cause: degradedCauseLabel(cause) }),
    apiError: (errorClass) => apiErrors.add(1, { ...fnLabel, class: errorClassLabel(errorClass) }),
    delivery: (outcome) => deliveryCounts.set(outcome, (deliveryCounts.get(outcome) ?? 0) + 1),
    owedEvent: (outcome) => owedEvents.add(1, { ...fnLabel, outcome }),
    flush,
    shutdown: async () => {
      await exportNow();
      try {
        await provider.shutdown();
      } catch {
        // already reported by the flush
      }
    },
  };
}
