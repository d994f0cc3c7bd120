// When a recovery cycle really ends (docs/adr/0042-recovery-cycle-end.md). Only an honest
// condition resets the tracking, as in the reference driver; an honest failure resets it only
// once it has stayed for the first backoff window. Under API-server overload source-watcher's own
// writes fail too: its rebuild ends in an honest Ready=False (ReconciliationFailed) and its rate
// limiter retries 0.75 s later, where the conditions write can be lost again. Clearing on that
// False would restart the count and push the verdict past the HelmRelease's 15 minutes.

import type { RecoveryConfig } from '../config/recovery-config.js';
import { readyOf } from '../objects/conditions.js';
import { parseTime } from '../codecs/time.js';
import type { ArtifactGenerator } from '../objects/types.js';

/**
 * The moment from which an honest Ready=False on `ag` counts as staying (its lastTransitionTime
 * plus the first backoff), or null when Ready is not False or its time is unusable (unparseable,
 * or further ahead than the clock-skew allowance): then nothing waits, the cycle ends at once.
 */
export function honestFailureSettlesAt(
  ag: ArtifactGenerator,
  now: number,
  cfg: Pick<RecoveryConfig, 'backoffInitialMs' | 'clockSkewMs'>,
): number | null {
  const ready = readyOf(ag);
  if (ready?.status !== 'False') return null;
  const since = parseTime(ready.lastTransitionTime);
  if (since === null || since > now + cfg.clockSkewMs) return null;
  return since + cfg.backoffInitialMs;
}

/**
 * With the gate closed (healthy or failing honestly), whether the cycle is over and the tracking
 * may be cleared: Ready True, Ready Unknown or missing on another footing (a new generation), or
 * an honest failure that has stayed for the first backoff window. A younger honest failure keeps
 * the count: if source-watcher's retry stalls again, the next force is the cycle's next attempt.
 */
export function cycleEnded(
  ag: ArtifactGenerator,
  now: number,
  cfg: Pick<RecoveryConfig, 'backoffInitialMs' | 'clockSkewMs'>,
): boolean {
  const settlesAt = honestFailureSettlesAt(ag, now, cfg);
  return settlesAt === null || settlesAt <= now;
}
