import type { Express } from 'express';
import {
  appOptions,
  createFunctionApp,
  type AppOptions,
  type DepsGiven,
} from '../../shared/runtime/function-app.js';
import { createHistoryNotices } from '../../shared/recovery/history-notices.js';
import { createPreviousVersions } from '../../shared/recovery/previous-versions.js';
import type { DetectDeps, DetectKept } from './deps.js';
import { createRecentActions } from './recent-actions.js';
import { handleDetect } from './handler.js';
import { createSweepResumes } from './sweep-resume.js';

export function createApp(
  given: DepsGiven<DetectDeps, DetectKept>,
  opts: AppOptions = {},
): Express {
  const deps: DetectDeps = {
    ...given,
    notices: given.notices ?? createHistoryNotices(given.metrics),
    previousVersions: given.previousVersions ?? createPreviousVersions(given.kube),
    recentActions: given.recentActions ?? createRecentActions(),
    sweepResumes: given.sweepResumes ?? createSweepResumes(),
  };
  return createFunctionApp({
    logger: deps.logger,
    deadline: { clock: deps.clock, ms: deps.config.deliveryDeadlineMs },
    handle: (event, log) => handleDetect(event, log, deps),
    ...appOptions(opts),
  });
}
