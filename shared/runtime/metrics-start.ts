// Builds a function's metrics port from its config (docs/adr/0059-otlp-metrics.md): with no OTLP
// endpoint the no-op port, and the OpenTelemetry SDK is never imported (nothing on the cold path);
// with one, metrics-otel.ts is imported here, once. Also the HTTP wrapper that counts every
// delivery by outcome and flushes when it ends, so a pod that scales to zero loses nothing.

import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { FunctionConfig } from './env.js';
import type { Logger } from './logger.js';
import { deliveryOutcome, noopMetrics, type Metrics } from './metrics.js';

export async function startMetrics(
  fn: string,
  config: Pick<FunctionConfig, 'metricsExport'>,
  logger: Logger,
): Promise<Metrics> {
  if (config.metricsExport === undefined) return noopMetrics;
  const { createOtelMetrics } = await import('./metrics-otel.js');
  logger.info({ url: config.metricsExport.url }, 'metrics exported over OTLP');
  return createOtelMetrics(fn, config.metricsExport, logger);
}

/**
 * `handler` with every CloudEvent delivery (a POST) counted by its outcome when its response
 * ends, then a flush (not awaited: the answer has gone). dead-letter's deliveries count as
 * "dead-letter".
 */
export function countingDeliveries(
  fn: string,
  handler: RequestListener,
  metrics: Metrics,
): RequestListener {
  if (metrics === noopMetrics) return handler;
  return (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'POST') {
      res.once('finish', () => {
        metrics.delivery(deliveryOutcome(res.statusCode, fn === 'dead-letter'));
        void metrics.flush();
      });
    }
    handler(req, res);
  };
}
