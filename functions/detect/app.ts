import type { Express } from 'express';
import { createFunctionApp } from '../../shared/runtime/function-app.js';
import { createHistoryNotices } from '../../shared/runtime/history-notices.js';
import { createPreviousVersions } from '../../shared/runtime/previous-versions.js';
import type { DetectDeps, DetectRuntime } from './deps.js';
import { createRecentActions } from './recent-actions.js';
import { handleDetect } from './handler.js';
import { createSweepResumes } from './sweep-resume.js';

export function createApp(deps: DetectDeps, opts: { isReady?: () => boolean } = {}): Express {
  const runtime: DetectRuntime = {
    ...deps,
    notices: createHistoryNotices(),
    previousVersions: createPreviousVersions(deps.kube),
    recentActions: createRecentActions(),
    sweepResumes: createSweepResumes(),
  };
  return createFunctionApp({
    logger: deps.logger,
    deadline: { clock: deps.clock, ms: deps.config.deliveryDeadlineMs },
    handle: (event, log) => handleDetect(event, log, runtime),
    ...(opts.isReady ? { isReady: opts.isReady } : {}),
  });
}
