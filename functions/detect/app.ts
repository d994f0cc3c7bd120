import type { Express } from 'express';
import {
  appOptions,
  createFunctionApp,
  type AppOptions,
} from '../../shared/runtime/function-app.js';
import { createHistoryNotices } from '../../shared/recovery/history-notices.js';
import { createPreviousVersions } from '../../shared/recovery/previous-versions.js';
import type { DetectDeps, DetectRuntime } from './deps.js';
import { createRecentActions } from './recent-actions.js';
import { handleDetect } from './handler.js';
import { createSweepResumes } from './sweep-resume.js';

export function createApp(deps: DetectDeps, opts: AppOptions = {}): Express {
  const runtime: DetectRuntime = {
    ...deps,
    notices: createHistoryNotices(deps.metrics),
    previousVersions: createPreviousVersions(deps.kube),
    recentActions: createRecentActions(),
    sweepResumes: createSweepResumes(),
  };
  return createFunctionApp({
    logger: deps.logger,
    deadline: { clock: deps.clock, ms: deps.config.deliveryDeadlineMs },
    handle: (event, log) => handleDetect(event, log, runtime),
    ...appOptions(opts),
  });
}
