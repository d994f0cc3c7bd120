import type { Express } from 'express';
import { createFunctionApp } from '../../shared/runtime/function-app.js';
import type { SurfaceStalledDeps } from './deps.js';
import { handleSurfaceStalled } from './handler.js';

export function createApp(
  deps: SurfaceStalledDeps,
  opts: { isReady?: () => boolean } = {},
): Express {
  return createFunctionApp({
    logger: deps.logger,
    deadline: { clock: deps.clock, ms: deps.config.deliveryDeadlineMs },
    handle: (event, log) => handleSurfaceStalled(event, log, deps),
    ...(opts.isReady ? { isReady: opts.isReady } : {}),
  });
}
