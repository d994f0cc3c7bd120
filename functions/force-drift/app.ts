import type { Express } from 'express';
import {
  appOptions,
  createFunctionApp,
  type AppOptions,
  type DepsGiven,
} from '../../shared/runtime/function-app.js';
import { createHistoryNotices } from '../../shared/recovery/history-notices.js';
import { createPreviousVersions } from '../../shared/recovery/previous-versions.js';
import { createWarnOnce } from '../../shared/runtime/warn-once.js';
import { createOwedEvents } from '../../shared/recovery/owed-kube-events.js';
import type { ForceDriftDeps, ForceDriftKept } from './deps.js';
import { handleForceDrift } from './handler.js';

export function createApp(
  given: DepsGiven<ForceDriftDeps, ForceDriftKept>,
  opts: AppOptions = {},
): Express {
  const deps: ForceDriftDeps = {
    ...given,
    notices: given.notices ?? createHistoryNotices(given.metrics),
    previousVersions: given.previousVersions ?? createPreviousVersions(given.kube),
    warnOnce: given.warnOnce ?? createWarnOnce(),
    owedEvents: given.owedEvents ?? createOwedEvents(given.metrics),
  };
  return createFunctionApp({
    logger: deps.logger,
    deadline: { clock: deps.clock, ms: deps.config.deliveryDeadlineMs },
    handle: (event, log) => handleForceDrift(event, log, deps),
    ...appOptions(opts),
  });
}
