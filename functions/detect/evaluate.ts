// One AG through the decision core: which action event is due (if any) and when the AG must be
// looked at again. Shared by the event path and the sweep; no I/O (emit-action.ts sends it).

import { decide, nextCheckAt, type Decision, type Signals } from '../../shared/core/index.js';
import type { ArtifactGenerator } from '../../shared/core/objects/types.js';
import {
  ACTION_CLEAR_TRACKING,
  ACTION_FORCE,
  ACTION_STALLED,
  type ActionType,
} from '../../shared/core/objects/cloudevent-types.js';
import type { DetectDeps } from './deps.js';

export interface Evaluation {
  readonly decision: Decision;
  readonly action: ActionType | undefined;
  /** A future moment to look again, or null. */
  readonly nextCheck: number | null;
}

export function actionFor(decision: Decision): ActionType | undefined {
  switch (decision.kind) {
    case 'force':
    case 'resume':
      return ACTION_FORCE;
    case 'give-up':
      return ACTION_STALLED;
    case 'healthy':
      return decision.clearTracking ? ACTION_CLEAR_TRACKING : undefined;
    case 'wait':
    case 'ignore':
      return undefined;
  }
}

export function evaluate(
  ag: ArtifactGenerator,
  now: number,
  deps: DetectDeps,
  signals?: Signals,
): Evaluation {
  const cfg = deps.config.recovery;
  const decision = decide(ag, now, cfg, signals);
  const next = nextCheckAt(ag, now, cfg, decision);
  return {
    decision,
    action: actionFor(decision),
    nextCheck: next !== null && next > now ? next : null,
  };
}
