// Builds a function's metrics port from its config (docs/adr/0059-otlp-metrics.md): with no OTLP
// endpoint the no-op port, and the OpenTelemetry SDK is never imported (nothing on the cold path);
// with one, metrics-otel.ts is imported here, once. Also the HTTP wrapper that counts every
// delivery by outcome and flushes when it ends, so a pod that scales to zero loses nothing; the
// kube ports' wrapper counting API errors (and writes an admission policy denied); the sender
// check's wrapper counting unauthenticated deliveries.

import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { isKubeError } from '../kube/errors.js';
import type { FunctionConfig } from './env.js';
import type { Logger } from './logger.js';
import { deliveryOutcome, isPolicyDenial, noopMetrics, type Metrics } from './metrics.js';
import type { SenderAuth, SenderCheckResult } from './sender-auth.js';

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
 * ends, then a flush within a second (not awaited: the answer has gone). dead-letter's count as
 * "dead-letter".
 */
export function countingDeliveries(
  fn: string,
  handler: RequestListener,
  metrics: Metrics,
): RequestListener {
  if (metrics === noopMetrics) return handler;
  const deadLetter = fn === 'dead-letter';
  // One listener function for every response ('finish' fires once each): no closure and no
  // once() wrapper per delivery (bench P3, metrics on vs off; docs/adr/0069).
  function counted(this: ServerResponse): void {
    metrics.delivery(deliveryOutcome(this.statusCode, deadLetter));
    void metrics.flush();
  }
  return (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'POST') res.on('finish', counted);
    handler(req, res);
  };
}

/**
 * `port` (a KubePort, an ExternalArtifactPort) with every call that fails with a typed
 * Kubernetes error counted by its class, and a write that a ValidatingAdmissionPolicy denied
 * counted as a refusal (policy-denied, docs/adr/0055); the error is rethrown unchanged.
 */
export function countingApiErrors<T extends object>(port: T, metrics: Metrics): T {
  if (metrics === noopMetrics) return port;
  return new Proxy(port, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        const counted = (e: unknown): never => {
          if (isKubeError(e)) {
            metrics.apiError(e.kind);
            if (isWrite(key) && isPolicyDenial(e.kind, e.message)) metrics.refused('policy-denied');
          }
          throw e;
        };
        try {
          const result: unknown = Reflect.apply(
            value as (...a: unknown[]) => unknown,
            target,
            args,
          );
          return result instanceof Promise ? result.catch(counted) : result;
        } catch (e) {
          return counted(e);
        }
      };
    },
  });
}

/** A port method that writes (the KubePort's and ExternalArtifactPort's names say so). */
function isWrite(key: string | symbol): boolean {
  return typeof key === 'string' && /^(create|patch|update|delete)[A-Z]/.test(key);
}

/**
 * The sender check with every delivery it refuses (401, 403: no, a bad or a foreign token)
 * counted as a refusal (unauthenticated, docs/adr/0056). A review that failed (503) is not a
 * refusal: the Broker redelivers.
 */
export function countingRefusals(auth: SenderAuth, metrics: Metrics): SenderAuth {
  if (metrics === noopMetrics) return auth;
  const counted = (result: SenderCheckResult): SenderCheckResult => {
    if (!result.ok && result.status !== 503) metrics.refused('unauthenticated');
    return result;
  };
  return {
    get reviews() {
      return auth.reviews;
    },
    check(headers) {
      const result = auth.check(headers);
      return result instanceof Promise ? result.then(counted) : counted(result);
    },
  };
}
