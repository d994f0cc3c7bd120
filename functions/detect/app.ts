import type { Express } from 'express';
import { createFunctionApp } from '../../shared/runtime/function-app.js';
import type { DetectDeps } from './deps.js';
import { handleDetect } from './handler.js';

export function createApp(deps: DetectDeps, opts: { isReady?: () => boolean } = {}): Express {
  return createFunctionApp({
    logger: deps.logger,
    handle: (event, log) => handleDetect(event, log, deps),
    ...(opts.isReady ? { isReady: opts.isReady } : {}),
  });
}
