// The standard OpenTelemetry variables the metrics export honours (docs/operations.md,
// "Monitoring"), read from the environment record loadConfig is given (env.ts stays the one
// reader of process.env). No endpoint, or OTEL_METRICS_EXPORTER=none or OTEL_SDK_DISABLED=true:
// no export, and the SDK is never imported.

import { isHttpUrl } from './http-url.js';

export interface MetricsExportConfig {
  /** The OTLP/HTTP metrics URL (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, else ENDPOINT + /v1/metrics). */
  readonly url: string;
  /** OTEL_EXPORTER_OTLP_(METRICS_)HEADERS: key=value,... */
  readonly headers: Readonly<Record<string, string>>;
  /** OTEL_EXPORTER_OTLP_(METRICS_)TIMEOUT, ms (default 10 000). */
  readonly timeoutMs: number;
  /** OTEL_METRIC_EXPORT_INTERVAL, ms (default 60 000); deliveries and SIGTERM also flush. */
  readonly intervalMs: number;
  /** OTEL_SERVICE_NAME (default: the function's name). */
  readonly serviceName: string | undefined;
  /** OTEL_RESOURCE_ATTRIBUTES: key=value,... */
  readonly resourceAttributes: Readonly<Record<string, string>>;
}

type Env = Readonly<Record<string, string | undefined>>;

/** undefined when metrics are not exported; pushes a message to `errors` for a bad value. */
export function parseMetricsExport(env: Env, errors: string[]): MetricsExportConfig | undefined {
  const text = (key: string): string | undefined => {
    const v = env[key];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  if ((text('OTEL_SDK_DISABLED') ?? '').toLowerCase() === 'true') return undefined;
  const exporter = (text('OTEL_METRICS_EXPORTER') ?? 'otlp').toLowerCase();
  if (exporter === 'none') return undefined;
  if (exporter !== 'otlp') {
    errors.push(`OTEL_METRICS_EXPORTER="${exporter}": expected otlp or none`);
    return undefined;
  }
  const specific = text('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT');
  const base = text('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (specific === undefined && base === undefined) return undefined;
  const url = specific ?? `${base!.replace(/\/+$/, '')}/v1/metrics`;
  const key =
    specific !== undefined ? 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  if (!isHttpUrl(url)) errors.push(`${key}="${specific ?? base}": expected an http(s) URL`);
  const protocol =
    text('OTEL_EXPORTER_OTLP_METRICS_PROTOCOL') ??
    text('OTEL_EXPORTER_OTLP_PROTOCOL') ??
    'http/json';
  if (protocol !== 'http/json' && protocol !== 'http/protobuf') {
    errors.push(
      `OTEL_EXPORTER_OTLP_PROTOCOL="${protocol}": only http/json is exported (OTLP over HTTP)`,
    );
  }
  const headers = pairs(
    'OTEL_EXPORTER_OTLP_HEADERS',
    text('OTEL_EXPORTER_OTLP_METRICS_HEADERS') ?? text('OTEL_EXPORTER_OTLP_HEADERS'),
    errors,
  );
  const timeoutMs = millis(
    'OTEL_EXPORTER_OTLP_TIMEOUT',
    text('OTEL_EXPORTER_OTLP_METRICS_TIMEOUT') ?? text('OTEL_EXPORTER_OTLP_TIMEOUT'),
    10_000,
    errors,
  );
  const intervalMs = millis(
    'OTEL_METRIC_EXPORT_INTERVAL',
    text('OTEL_METRIC_EXPORT_INTERVAL'),
    60_000,
    errors,
  );
  return {
    url,
    headers,
    timeoutMs,
    intervalMs,
    serviceName: text('OTEL_SERVICE_NAME'),
    resourceAttributes: pairs('OTEL_RESOURCE_ATTRIBUTES', text('OTEL_RESOURCE_ATTRIBUTES'), errors),
  };
}

function millis(
  key: string,
  value: string | undefined,
  fallback: number,
  errors: string[],
): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^[0-9]{1,7}$/.test(value) || n < 1) {
    errors.push(`${key}="${value}": expected milliseconds, at least 1`);
    return fallback;
  }
  return n;
}

/** W3C-baggage-like key=value,key=value (values percent-decoded), as the OTel spec says. */
function pairs(key: string, value: string | undefined, errors: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  if (value === undefined) return out;
  for (const part of value.split(',')) {
    const at = part.indexOf('=');
    const k = at > 0 ? part.slice(0, at).trim() : '';
    if (k === '') {
      errors.push(`${key}: "${part}" is not key=value`);
      continue;
    }
    try {
      out[k] = decodeURIComponent(part.slice(at + 1).trim());
    } catch {
      errors.push(`${key}: the value of "${k}" is not percent-encoded text`);
    }
  }
  return out;
}
