// A warn line the first time this process sees a cause, debug lines after that: under the storm
// that causes fluxcd/pkg#934 the same trouble repeats on every delivery, and operators need to
// learn of it once, not have the logs flooded (issue 19).

import type { Logger } from './logger.js';

/** Logs `msg` at warn the first time `cause` is seen, and `repeatMsg` (default: `msg`) at debug after. */
export type WarnOnce = (
  cause: string,
  log: Logger,
  fields: Record<string, unknown>,
  msg: string,
  repeatMsg?: string,
) => void;

export function createWarnOnce(): WarnOnce {
  const warned = new Set<string>();
  return (cause, log, fields, msg, repeatMsg = msg) => {
    if (warned.has(cause)) {
      log.debug(fields, repeatMsg);
      return;
    }
    warned.add(cause);
    log.warn(fields, msg);
  };
}
