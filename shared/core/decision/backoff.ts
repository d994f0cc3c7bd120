// The backoff between forces: initial, doubling per attempt, capped.

import type { RecoveryConfig } from '../config/recovery-config.js';

/**
 * Backoff after `attempts` forces: initial * 2^(attempts-1), capped at max; attempts <= 1 gives
 * initial. Defaults: 30s, 30s, 60s, 2m, 4m, 4m... Never overflows, whatever `attempts` is.
 */
export function backoffFor(
  attempts: number,
  cfg: Pick<RecoveryConfig, 'backoffInitialMs' | 'backoffMaxMs'>,
): number {
  const initial = cfg.backoffInitialMs;
  const cap = Math.max(initial, cfg.backoffMaxMs);
  if (!(attempts > 1) || !(initial > 0)) return initial;
  let value = initial;
  // A positive double reaches any finite cap within ~2100 doublings, so this loop is bounded.
  for (let i = 1; i < attempts && value < cap; i++) value *= 2;
  return Math.min(value, cap);
}
