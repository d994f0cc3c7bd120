import type { Express } from 'express';
import {
  appOptions,
  createFunctionApp,
  type AppOptions,
} from '../../shared/runtime/function-app.js';
import type { SurfaceStalledDeps } from './deps.js';
import { handleSurfaceStalled } from './handler.js';

export function createApp(deps: SurfaceStalledDeps, opts: AppOptions = {}): Express {
  return createFunctionApp({
    logger: deps.logger,
    deadline: { clock: deps.clock, ms: deps.config.deliveryDeadlineMs },
    handle: (event, log) => handleSurfaceStalled(event, log, deps),
    ...appOptions(opts),
  });
}
