// The metrics port (docs/adr/0059): the standard OTEL_* variables it honours, the no-op port when
// no endpoint is set, and the OpenTelemetry port's OTLP/HTTP export (names, bounded labels) as a
// real HTTP receiver on 127.0.0.1 gets it when a flush runs.

import { afterEach, describe, expect, it } from 'vitest';
import { loadPodConfig } from '../../support/pod-config.js';
import { startOtlpReceiver, type OtlpReceiver } from '../../support/otlp-receiver.js';
import { createLogger } from '../../../shared/runtime/logger.js';
import {
  attemptLabel,
  deliveryOutcome,
  errorClassLabel,
  noopMetrics,
} from '../../../shared/runtime/metrics.js';
import { parseMetricsExport } from '../../../shared/runtime/metrics-config.js';
import { startMetrics } from '../../../shared/runtime/metrics-start.js';

const silent = createLogger({ name: 'metrics-test', level: 'silent' });

describe('metrics: OTEL_* variables', () => {
  const cases: [string, Record<string, string>, string | undefined][] = [
    ['no endpoint: no export', {}, undefined],
    [
      'the base endpoint gets /v1/metrics',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' },
      'http://c:4318/v1/metrics',
    ],
    [
      'the metrics endpoint is used as it is',
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://p:9090/api/v1/otlp/v1/metrics',
      },
      'http://p:9090/api/v1/otlp/v1/metrics',
    ],
    [
      'OTEL_METRICS_EXPORTER=none: no export',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_METRICS_EXPORTER: 'none' },
      undefined,
    ],
    [
      'OTEL_SDK_DISABLED=true: no export',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' },
      undefined,
    ],
  ];
  it.each(cases)('%s', (_what, env, url) => {
    const errors: string[] = [];
    expect(parseMetricsExport(env, errors)?.url).toBe(url);
    expect(errors).toEqual([]);
  });

  it('headers, resource attributes, interval and timeout', () => {
    const errors: string[] = [];
    const cfg = parseMetricsExport(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c',
        OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20x,tenant=a',
        OTEL_RESOURCE_ATTRIBUTES: 'k8s.cluster.name=prod',
        OTEL_METRIC_EXPORT_INTERVAL: '15000',
        OTEL_EXPORTER_OTLP_TIMEOUT: '2000',
        OTEL_SERVICE_NAME: 'swr-detect',
      },
      errors,
    );
    expect(errors).toEqual([]);
    expect(cfg).toEqual({
      url: 'https://c/v1/metrics',
      headers: { authorization: 'Bearer x', tenant: 'a' },
      resourceAttributes: { 'k8s.cluster.name': 'prod' },
      intervalMs: 15000,
      timeoutMs: 2000,
      serviceName: 'swr-detect',
    });
  });

  const bad: [string, Record<string, string>, RegExp][] = [
    [
      'a non-URL endpoint',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
      /OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318": expected an http\(s\) URL/,
    ],
    [
      'grpc',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      /only http\/json/,
    ],
    ['another exporter', { OTEL_METRICS_EXPORTER: 'prometheus' }, /expected otlp or none/],
    [
      'a bad interval',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_METRIC_EXPORT_INTERVAL: 'soon' },
      /OTEL_METRIC_EXPORT_INTERVAL="soon"/,
    ],
    [
      'a header without =',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_HEADERS: 'token' },
      /is not key=value/,
    ],
  ];
  it.each(bad)('loadConfig fails fast on %s', (_what, env, message) => {
    expect(() => loadPodConfig(env)).toThrow(message);
  });
});

describe('metrics: labels stay bounded', () => {
  it('attempts, outcomes and error classes', () => {
    expect([1, 5, 6, 1000, 0, 1.5].map(attemptLabel)).toEqual(['1', '5', '6+', '6+', '0', '0']);
    expect([200, 202, 400, 429, 500, 503].map((s) => deliveryOutcome(s, false))).toEqual([
      'ok',
      'ok',
      'rejected',
      'retry',
      'retry',
      'retry',
    ]);
    expect(deliveryOutcome(200, true)).toBe('dead-letter');
    expect(['Transient', 'a message with an id 123'].map(errorClassLabel)).toEqual([
      'Transient',
      'other',
    ]);
  });
});

interface OtlpBody {
  resourceMetrics: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeMetrics: {
      metrics: {
        name: string;
        sum?: {
          isMonotonic?: boolean;
          aggregationTemporality?: number;
          dataPoints: {
            asInt?: number;
            asDouble?: number;
            attributes: { key: string; value: { stringValue?: string } }[];
          }[];
        };
        histogram?: { dataPoints: { count: number | string }[] };
      }[];
    }[];
  }[];
}

let receiver: OtlpReceiver<OtlpBody> | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

describe('metrics: the OpenTelemetry port', () => {
  it('no endpoint: the no-op port (the SDK is not imported)', async () => {
    expect(await startMetrics('detect', loadPodConfig({}), silent)).toBe(noopMetrics);
  });

  it('pushes OTLP/HTTP JSON with the documented names and bounded labels when flushed', async () => {
    receiver = await startOtlpReceiver<OtlpBody>();
    const { bodies } = receiver;
    const config = loadPodConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_METRIC_EXPORT_INTERVAL: '600000',
    });
    const metrics = await startMetrics('force-drift', config, silent);
    expect(metrics).not.toBe(noopMetrics);
    const ag = { namespace: 'cozy-system', name: 'a' };
    metrics.forced(ag, 1);
    metrics.forced(ag, 2);
    metrics.forced(ag, 9);
    metrics.recovered(ag, 45);
    metrics.delivery('ok');
    metrics.delivery('ok');
    metrics.delivery('retry');
    await metrics.shutdown();
    expect(bodies.length).toBeGreaterThan(0);
    const last = bodies.at(-1)!.resourceMetrics[0]!;
    expect(last.resource.attributes).toContainEqual({
      key: 'service.name',
      value: { stringValue: 'force-drift' },
    });
    // One series per pod: a service.instance.id (Prometheus's `instance`) of its own.
    const instance = last.resource.attributes.find((a) => a.key === 'service.instance.id');
    expect(instance?.value.stringValue).toMatch(/^[0-9a-f-]{36}$/);
    const byName = new Map(last.scopeMetrics.flatMap((s) => s.metrics).map((m) => [m.name, m]));
    expect([...byName.keys()].sort()).toEqual([
      'source_watcher_recovery.deliveries',
      'source_watcher_recovery.forces',
      'source_watcher_recovery.recoveries',
      'source_watcher_recovery.stall.duration',
    ]);
    const attempts = byName
      .get('source_watcher_recovery.forces')!
      .sum!.dataPoints.map((p) => p.attributes.find((a) => a.key === 'attempt')?.value.stringValue)
      .sort();
    expect(attempts).toEqual(['1', '2', '6+']);
    // Deliveries are tallied and observed at collection: the same cumulative monotonic sum
    // (Prometheus's *_total) a counter exports, one point per function and outcome.
    const deliveries = byName.get('source_watcher_recovery.deliveries')!.sum!;
    expect(deliveries.isMonotonic).toBe(true);
    expect(deliveries.aggregationTemporality).toBe(2); // AGGREGATION_TEMPORALITY_CUMULATIVE
    const label = (p: {
      attributes: { key: string; value: { stringValue?: string } }[];
    }): Record<string, string | undefined> =>
      Object.fromEntries(p.attributes.map((a) => [a.key, a.value.stringValue]));
    expect(
      deliveries.dataPoints
        .map((p): Record<string, unknown> => ({ ...label(p), n: Number(p.asInt ?? p.asDouble) }))
        .sort((a, b) => String(a['outcome']).localeCompare(String(b['outcome']))),
    ).toEqual([
      { function: 'force-drift', outcome: 'ok', n: 2 },
      { function: 'force-drift', outcome: 'retry', n: 1 },
    ]);
    expect(
      Number(byName.get('source_watcher_recovery.stall.duration')!.histogram!.dataPoints[0]!.count),
    ).toBe(1);
  });
});

describe('metrics: API errors by class', () => {
  it('a failing call is counted by its typed class and rethrown unchanged; a success is not counted', async () => {
    const { KubeError } = await import('../../../shared/kube/errors.js');
    const { countingApiErrors } = await import('../../../shared/runtime/metrics-start.js');
    const seen: string[] = [];
    const metrics = { ...noopMetrics, apiError: (c: string) => void seen.push(c) };
    const err = Object.create(KubeError.prototype) as InstanceType<typeof KubeError>;
    Object.defineProperty(err, 'kind', { value: 'Transient' });
    const port = countingApiErrors(
      { ok: () => Promise.resolve(1), fails: () => Promise.reject(err) },
      metrics,
    );
    expect(await port.ok()).toBe(1);
    await expect(port.fails()).rejects.toBe(err);
    expect(seen).toEqual(['Transient']);
  });
});
