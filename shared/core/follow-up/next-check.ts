// When an AG must be looked at again if no event arrives: exact follow-ups instead of polling.

import type { RecoveryConfig } from '../config/recovery-config.js';
import { honestFailureSettlesAt } from '../decision/cycle.js';
import { decide, forceUnfinished, RESUME_SETTLE_MS, type Decision } from '../decision/decide.js';
import { hasOutputs, pendingSince } from '../decision/stuck.js';
import { readTracking } from '../decision/tracking.js';
import type { ArtifactGenerator } from '../objects/types.js';

/**
 * The epoch ms at which decide() may give a different answer without any change to the AG, or null
 * when nothing is pending (deleting/invalid, mode off, healthy with no grace running, give-up).
 */
export function nextCheckAt(
  ag: ArtifactGenerator,
  now: number,
  cfg: RecoveryConfig,
  /** decide(ag, now, cfg), when the caller already has it. */
  decision: Decision = decide(ag, now, cfg),
): number | null {
  if (cfg.mode === 'off') return null;
  switch (decision.kind) {
    case 'ignore':
    case 'give-up':
      return null;
    case 'force':
    case 'resume':
      return now;
    case 'healthy': {
      if (!decision.clearTracking && readTracking(ag, now, cfg).present) {
        // A young honest failure after a force: look again when it has stayed (the cycle ends).
        const settlesAt = honestFailureSettlesAt(ag, now, cfg);
        if (settlesAt !== null && settlesAt > now) return settlesAt;
      }
      if (!hasOutputs(ag)) return null;
      const since = pendingSince(ag);
      if (typeof since !== 'number') return null;
      // A Ready time further ahead than the clock-skew allowance is malformed: it never becomes
      // stuck by waiting, so nothing is armed (the resync still sees the AG).
      if (since > now + cfg.clockSkewMs) return null;
      const at = since + cfg.gracePeriodMs + 1;
      return at > now ? at : null;
    }
    case 'wait': {
      const { attempts, lastRecoveryAt } = readTracking(ag, now, cfg);
      if (lastRecoveryAt !== null && forceUnfinished(ag, attempts, lastRecoveryAt)) {
        const resumeAt = lastRecoveryAt + RESUME_SETTLE_MS;
        if (resumeAt > now) return Math.min(decision.until, resumeAt);
      }
      return decision.until;
    }
  }
}
