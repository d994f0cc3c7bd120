import type { Express } from 'express';
import {
  appOptions,
  createFunctionApp,
  type AppOptions,
} from '../../shared/runtime/function-app.js';
import type { SurfaceStalledDeps } from './deps.js';
import { handleSurfaceStalled } from './handler.js';
import { createOwedEvents } from '../../shared/recovery/owed-kube-events.js';

export function createApp(deps: SurfaceStalledDeps, opts: AppOptions = {}): Express {
  const runtime: SurfaceStalledDeps = {
    ...deps,
    owedEvents: deps.owedEvents ?? createOwedEvents(deps.metrics),
  };
  return createFunctionApp({
    logger: deps.logger,
    deadline: { clock: deps.clock, ms: deps.config.deliveryDeadlineMs },
    handle: (event, log) => handleSurfaceStalled(event, log, runtime),
    ...appOptions(opts),
  });
}
