import type { Express } from 'express';
import {
  appOptions,
  createFunctionApp,
  type AppOptions,
  type DepsGiven,
} from '../../shared/runtime/function-app.js';
import type { SurfaceStalledDeps, SurfaceStalledKept } from './deps.js';
import { handleSurfaceStalled } from './handler.js';
import { createOwedEvents } from '../../shared/recovery/owed-kube-events.js';

export function createApp(
  given: DepsGiven<SurfaceStalledDeps, SurfaceStalledKept>,
  opts: AppOptions = {},
): Express {
  const deps: SurfaceStalledDeps = {
    ...given,
    owedEvents: given.owedEvents ?? createOwedEvents(given.metrics),
  };
  return createFunctionApp({
    logger: deps.logger,
    deadline: { clock: deps.clock, ms: deps.config.deliveryDeadlineMs },
    handle: (event, log) => handleSurfaceStalled(event, log, deps),
    ...appOptions(opts),
  });
}
