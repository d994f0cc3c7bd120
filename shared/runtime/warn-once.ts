// A warn line the first time this process sees a cause, debug lines after that: under the storm
// that causes fluxcd/pkg#934 the same trouble repeats on every delivery, and operators need to
// learn of it once, not have the logs flooded (issue 19).

import type { Logger } from './logger.js';

export type WarnOnce = (
  cause: string,
  log: Logger,
  fields: Record<string, unknown>,
  msg: string,
) => void;

export function createWarnOnce(): WarnOnce {
  const warned = new Set<string>();
  return (cause, log, fields, msg) => {
    if (warned.has(cause)) {
      log.debug(fields, msg);
      return;
    }
    warned.add(cause);
    log.warn(fields, msg);
  };
}
