import type { Express } from 'express';
import { createFunctionApp } from '../../shared/runtime/function-app.js';
import { createHistoryNotices } from '../../shared/runtime/history-notices.js';
import { createPreviousVersions } from '../../shared/runtime/previous-versions.js';
import { createWarnOnce } from '../../shared/runtime/warn-once.js';
import type { ForceDriftDeps, ForceDriftRuntime } from './deps.js';
import { handleForceDrift } from './handler.js';

export function createApp(deps: ForceDriftDeps, opts: { isReady?: () => boolean } = {}): Express {
  const runtime: ForceDriftRuntime = {
    ...deps,
    notices: createHistoryNotices(),
    previousVersions: createPreviousVersions(deps.kube),
    warnOnce: createWarnOnce(),
  };
  return createFunctionApp({
    logger: deps.logger,
    deadline: { clock: deps.clock, ms: deps.config.deliveryDeadlineMs },
    handle: (event, log) => handleForceDrift(event, log, runtime),
    ...(opts.isReady ? { isReady: opts.isReady } : {}),
  });
}
