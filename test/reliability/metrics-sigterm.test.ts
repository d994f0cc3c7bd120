// The built dead-letter function (node dist/functions/dead-letter/main.js) exporting its metrics
// to the Prometheus room: deliveries answered, then SIGTERM at once (Knative scaling the Revision
// to zero), before the delivery export's one-second wait is over. The last export on SIGTERM
// brings every delivery to Prometheus: nothing is lost when the pod goes.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPrometheus, type PrometheusRoom } from '../harness/prometheus/index.js';
import { ensureBuilt, spawnFunction } from '../harness/functions.js';
import { cloudEvent, postEvent } from '../support/http-events.js';

let prometheus: PrometheusRoom;

beforeAll(async () => {
  await ensureBuilt();
  prometheus = await startPrometheus();
}, 300_000);
afterAll(async () => {
  await prometheus?.stop();
});

describe('metrics: the last export on SIGTERM', () => {
  it('every delivery reaches Prometheus when the function is stopped right after answering', async () => {
    const child = await spawnFunction('dead-letter', {
      LOG_LEVEL: 'info',
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: prometheus.otlpMetricsUrl,
      OTEL_METRIC_EXPORT_INTERVAL: '600000',
      OTEL_SERVICE_NAME: 'dead-letter-sigterm',
    });
    for (let i = 0; i < 3; i++) {
      const answer = await postEvent(
        child.url,
        cloudEvent({ type: 'com.example.given-up', data: { i } }),
      );
      expect(answer.status).toBe(200);
    }
    child.kill('SIGTERM');
    const exit = await child.exited;
    expect(exit.code).toBe(0);
    const query =
      'sum(source_watcher_recovery_deliveries_total{job="source-watcher-recovery/dead-letter-sigterm",outcome="dead-letter"})';
    expect(await prometheus.scalar(query)).toBe(3);
  });
});
