import type { Express } from 'express';
import { createFunctionApp } from '../../shared/runtime/function-app.js';
import type { ForceDriftDeps } from './deps.js';
import { handleForceDrift } from './handler.js';

export function createApp(deps: ForceDriftDeps, opts: { isReady?: () => boolean } = {}): Express {
  return createFunctionApp({
    logger: deps.logger,
    handle: (event, log) => handleForceDrift(event, log, deps),
    ...(opts.isReady ? { isReady: opts.isReady } : {}),
  });
}
