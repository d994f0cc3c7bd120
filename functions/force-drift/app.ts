import type { Express } from 'express';
import {
  appOptions,
  createFunctionApp,
  type AppOptions,
} from '../../shared/runtime/function-app.js';
import { createHistoryNotices } from '../../shared/recovery/history-notices.js';
import { createPreviousVersions } from '../../shared/recovery/previous-versions.js';
import { createWarnOnce } from '../../shared/runtime/warn-once.js';
import { createOwedEvents } from '../../shared/recovery/owed-kube-events.js';
import type { ForceDriftDeps, ForceDriftRuntime } from './deps.js';
import { handleForceDrift } from './handler.js';

export function createApp(deps: ForceDriftDeps, opts: AppOptions = {}): Express {
  const runtime: ForceDriftRuntime = {
    ...deps,
    notices: createHistoryNotices(deps.metrics),
    previousVersions: createPreviousVersions(deps.kube),
    warnOnce: createWarnOnce(),
    owedEvents: createOwedEvents(deps.metrics),
  };
  return createFunctionApp({
    logger: deps.logger,
    deadline: { clock: deps.clock, ms: deps.config.deliveryDeadlineMs },
    handle: (event, log) => handleForceDrift(event, log, runtime),
    ...appOptions(opts),
  });
}
