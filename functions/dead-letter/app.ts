// dead-letter: the deadLetterSink of every Trigger. It records each event the Broker gave up on
// (with Knative's error extensions) at error level, so an operator can find and replay it.

import type { Express } from 'express';
import { createFunctionApp } from '../../shared/runtime/function-app.js';
import type { Logger } from '../../shared/runtime/logger.js';
import { handled } from '../../shared/runtime/outcome.js';

export interface DeadLetterDeps {
  readonly logger: Logger;
}

export function createApp(deps: DeadLetterDeps, opts: { isReady?: () => boolean } = {}): Express {
  return createFunctionApp({
    logger: deps.logger,
    handle: (event, log) => {
      log.error(
        {
          source: event.source,
          subject: event.subject,
          errorCode: event.extensions['knativeerrorcode'],
          errorDest: event.extensions['knativeerrordest'],
          data: event.data,
        },
        'dead-lettered event',
      );
      return Promise.resolve(handled('recorded'));
    },
    ...(opts.isReady ? { isReady: opts.isReady } : {}),
  });
}
