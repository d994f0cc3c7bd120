// pino JSON logs. Messages are constants; details go in structured fields. Credentials never
// reach a log line: known secret-bearing keys are redacted wherever they appear.

import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

export const REDACT_PATHS = [
  'authorization',
  'headers.authorization',
  '*.authorization',
  '*.headers.authorization',
  'token',
  '*.token',
  'bearerToken',
  '*.bearerToken',
  'clientKey',
  '*.clientKey',
  'clientCert',
  '*.clientCert',
  'client-key-data',
  '*["client-key-data"]',
  'client-certificate-data',
  '*["client-certificate-data"]',
];

export function createLogger(opts: {
  name: string;
  level: string;
  destination?: pino.DestinationStream;
}): Logger {
  const options: pino.LoggerOptions = {
    name: opts.name,
    level: opts.level,
    base: { function: opts.name },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

/** A logger that writes nothing (tests that do not look at logs). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

const LEVEL_METHODS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace']);
const noop = (): void => undefined;

/**
 * `parent.child(bindings)`, built only when a line is written at an enabled level. A child costs
 * more than a whole no-op event's decision (pino serialises and redacts its bindings), and the
 * no-op path writes nothing at the default level.
 */
export function lazyChild(parent: Logger, bindings: Record<string, unknown>): Logger {
  let real: Logger | undefined;
  return new Proxy(parent, {
    get(target, prop) {
      if (typeof prop === 'string' && LEVEL_METHODS.has(prop) && !target.isLevelEnabled(prop)) {
        return noop;
      }
      real ??= target.child(bindings);
      const value: unknown = Reflect.get(real, prop, real);
      return typeof value === 'function'
        ? (value as (...a: unknown[]) => unknown).bind(real)
        : value;
    },
  });
}
