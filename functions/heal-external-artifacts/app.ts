import type { Express } from 'express';
import { createFunctionApp } from '../../shared/runtime/function-app.js';
import type { HealDeps } from './deps.js';
import { handleHeal } from './handler.js';

export function createApp(deps: HealDeps, opts: { isReady?: () => boolean } = {}): Express {
  return createFunctionApp({
    logger: deps.logger,
    deadline: { clock: deps.clock, ms: deps.config.deliveryDeadlineMs },
    handle: (event, log) => handleHeal(event, log, deps),
    ...(opts.isReady ? { isReady: opts.isReady } : {}),
  });
}
