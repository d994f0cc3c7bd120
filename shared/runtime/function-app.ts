// The express scaffold shared by every function: health endpoints, a bounded raw body, CloudEvent
// parsing, a child logger per event, the delivery's deadline, and the outcome -> HTTP status
// mapping. It never listens.

import express, { type NextFunction, type Request, type Response } from 'express';
import { lazyChild, type Logger } from './logger.js';
import { HttpInputError, parseCloudEvent, type IncomingEvent } from './cloudevent-http.js';
import { outcomeForError, retryLater, type Outcome } from './outcome.js';
import type { Clock } from './clock.js';
import { ClientClosedError, DeliveryControl, inDelivery } from './delivery.js';
import { deliveryDeadlines, type DeliveryDeadlines } from './delivery-deadlines.js';
import type { SenderAuth, SenderCheckResult } from './sender-auth.js';

/** Large enough for a real ArtifactGenerator with managedFields in the event data. */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * A function's deps as createApp takes them: `Kept`, the state its process keeps for its life (the
 * history it read, the Events it owes, …), may be left out and is then made by createApp.
 */
export type DepsGiven<Deps, Kept extends keyof Deps> = Omit<Deps, Kept> & Partial<Pick<Deps, Kept>>;

/**
 * A function's handler. It may answer synchronously when it needs no I/O (detect's no-op path):
 * that delivery then arms no deadline and no close listener, and runs no promise (bench P3).
 */
export type EventHandler = (event: IncomingEvent, log: Logger) => Outcome | Promise<Outcome>;

export interface FunctionAppOptions {
  readonly logger: Logger;
  readonly handle: EventHandler;
  readonly bodyLimitBytes?: number;
  /** Readiness turns false while the server drains on SIGTERM. */
  readonly isReady?: () => boolean;
  /**
   * Each delivery's deadline (docs/adr/0057): its signal aborts after `ms` on `clock`'s monotonic
   * time, and the delivery answers 503. Without it a delivery ends only when its client goes away.
   */
  readonly deadline?: { readonly clock: Clock; readonly ms: number };
  /**
   * RECOVERY_AUTH=oidc: the sender check every POST passes before its body is read or the handler
   * runs (sender-auth.ts, docs/adr/0056). Absent: no check.
   */
  readonly senderAuth?: SenderAuth;
}

/** What a function's createApp takes besides its deps (main.ts and the test world pass them). */
export interface AppOptions {
  readonly isReady?: () => boolean;
  readonly senderAuth?: SenderAuth | undefined;
}

/** The AppOptions as FunctionAppOptions fields (absent ones left out). */
export function appOptions(opts: AppOptions): Pick<FunctionAppOptions, 'isReady' | 'senderAuth'> {
  return {
    ...(opts.isReady ? { isReady: opts.isReady } : {}),
    ...(opts.senderAuth ? { senderAuth: opts.senderAuth } : {}),
  };
}

export function createFunctionApp(opts: FunctionAppOptions): express.Express {
  const deadlines = opts.deadline && deliveryDeadlines(opts.deadline.clock, opts.deadline.ms);
  const respond = answerWriter();
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  // POST / first: every CloudEvent matches the first route, not the third (bench P3).
  app.post(
    '/',
    ...senderCheck(opts),
    express.raw({ type: () => true, limit: opts.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES }),
    (req: Request, res: Response) => {
      handleEvent(req, res, opts, deadlines, respond);
    },
  );

  app.get('/health/liveness', (_req, res) => {
    res.status(200).json({ status: 'ok' });
  });
  app.get('/health/readiness', (_req, res) => {
    const ready = opts.isReady?.() ?? true;
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not-ready' });
  });

  app.use((_req: Request, res: Response) => {
    res.status(404).json({ error: 'not found' });
  });

  // Body-parser errors (size, encoding) and anything else thrown synchronously.
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const status = httpStatusOf(err);
    if (status === 413) {
      opts.logger.warn(
        { limitBytes: opts.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES },
        'request body too large',
      );
      res.status(413).json({ error: 'request body too large' });
      return;
    }
    if (status !== undefined && status >= 400 && status < 500) {
      res.status(400).json({ error: 'bad request' });
      return;
    }
    opts.logger.error({ err: errorSummary(err) }, 'unhandled request error');
    res.status(500).json({ error: 'internal error' });
  });

  return app;
}

/** The sender check as a middleware before the body parser (none when auth is off). */
function senderCheck(opts: FunctionAppOptions): express.RequestHandler[] {
  const auth = opts.senderAuth;
  if (auth === undefined) return [];
  return [
    (req: Request, res: Response, next: NextFunction) => {
      let result: SenderCheckResult | Promise<SenderCheckResult>;
      try {
        result = auth.check(req.headers);
      } catch (e) {
        next(e);
        return;
      }
      // A kept verdict answers at once: the warm path runs no promise (bench P3).
      if (!(result instanceof Promise)) {
        admit(result, res, next, opts.logger);
        return;
      }
      void result.then(
        (r) => admit(r, res, next, opts.logger),
        (e: unknown) => next(e),
      );
    },
  ];
}

function admit(result: SenderCheckResult, res: Response, next: NextFunction, logger: Logger): void {
  if (result.ok) {
    next();
    return;
  }
  const fields = {
    status: result.status,
    reason: result.reason,
    ...(result.errorKind !== undefined ? { errorKind: result.errorKind } : {}),
  };
  if (result.status === 503) logger.warn(fields, 'sender check failed');
  else logger.warn(fields, 'rejected sender');
  if (result.status === 401) res.setHeader('WWW-Authenticate', 'Bearer');
  res.status(result.status).json({ error: result.reason });
}

function handleEvent(
  req: Request,
  res: Response,
  opts: FunctionAppOptions,
  deadlines: DeliveryDeadlines | undefined,
  respond: AnswerWriter,
): void {
  const body: Buffer = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  let event: IncomingEvent;
  try {
    event = parseCloudEvent(req.headers, body);
  } catch (e) {
    if (e instanceof HttpInputError) {
      opts.logger.warn({ status: e.status, reason: e.message }, 'rejected request');
      res.status(e.status).json({ error: e.message });
      return;
    }
    throw e;
  }
  const log = lazyChild(opts.logger, { ceId: event.id, ceType: event.type });
  // One signal per delivery (made only if something reads it): aborted by its deadline or by its
  // client closing the connection (the Broker's dispatcher does when it gives up). Every call the
  // handler makes reads it (delivery.ts). Either cause answers at once; the handler unwinds on
  // its own (its calls fail without a request). No listener is added to a signal here, and no
  // timer per delivery (delivery-deadlines.ts): on the no-op path they cost more than the rest of
  // the delivery (bench P3).
  const delivery = new DeliveryControl();
  let answer: Outcome | Promise<Outcome>;
  try {
    answer = inDelivery(delivery, () => opts.handle(event, log));
  } catch (error) {
    answer = Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
  // A handler that answered without waiting for anything is done: no deadline to arm, nothing
  // to listen for, no promise to run.
  if (!(answer instanceof Promise)) {
    respond(res, answer);
    return;
  }
  void awaitDelivery(answer, res, opts, deadlines, delivery, log, respond);
}

/**
 * A delivery whose handler waits for I/O: its deadline and its client's close are armed at once
 * (before any of that I/O can answer), and whichever ends first answers.
 */
async function awaitDelivery(
  answer: Promise<Outcome>,
  res: Response,
  opts: FunctionAppOptions,
  deadlines: DeliveryDeadlines | undefined,
  delivery: DeliveryControl,
  log: Logger,
  respond: AnswerWriter,
): Promise<void> {
  let ended = false;
  const onClose = (): void => {
    if (!res.writableFinished) abort(new ClientClosedError());
  };
  const end = (outcome: Outcome): void => {
    if (ended) return;
    ended = true;
    stopDeadline?.();
    res.off('close', onClose);
    const reason = delivery.reason;
    if (reason !== undefined) {
      log.warn(
        {
          result: outcome.result,
          deadlineMs: opts.deadline?.ms,
          clientClosed: reason instanceof ClientClosedError,
        },
        'delivery aborted',
      );
    }
    respond(res, outcome);
  };
  const abort = (reason: Error): void => {
    if (ended) return;
    delivery.abort(reason);
    end(abortedOutcome(reason));
  };
  // Never expires synchronously: end() sees it.
  const stopDeadline = deadlines?.start(abort);
  res.once('close', onClose);
  let outcome: Outcome;
  try {
    outcome = await answer;
  } catch (error) {
    if (ended) return;
    outcome = outcomeForError(error);
    const level = outcome.status >= 500 ? 'warn' : 'info';
    log[level]({ result: outcome.result, err: errorSummary(error) }, 'event failed');
  }
  end(outcome);
}

/** Writes a delivery's answer (one per app: answerWriter). */
type AnswerWriter = (res: Response, outcome: Outcome) => void;

const JSON_UTF8 = 'application/json; charset=utf-8';
/** At most this many result words keep their serialised body. */
const MAX_KEPT_ANSWERS = 256;

/**
 * `{"result": …}` as express's res.json writes it (the same status, body and headers), from a
 * body serialised once per result word. The words are the handlers' constants, so the kept
 * bodies stay few; a result past the bound is serialised each time. Bench P3: res.json's
 * settings lookups, header normalisation and freshness check cost the no-op path more than the
 * handler does (docs/adr/0069).
 */
function answerWriter(): AnswerWriter {
  const kept = new Map<string, { text: string; length: string }>();
  const bodyOf = (result: string): { text: string; length: string } => {
    const hit = kept.get(result);
    if (hit !== undefined) return hit;
    const text = JSON.stringify({ result });
    const body = { text, length: String(Buffer.byteLength(text)) };
    if (kept.size < MAX_KEPT_ANSWERS) kept.set(result, body);
    return body;
  };
  return (res, outcome) => {
    if (res.headersSent || res.destroyed) return;
    const body = bodyOf(outcome.result);
    res.writeHead(outcome.status, ['Content-Type', JSON_UTF8, 'Content-Length', body.length]);
    res.end(body.text);
  };
}

/** A delivery that ended before its handler: retryable, so the Broker redelivers it. */
function abortedOutcome(reason: Error): Outcome {
  return retryLater(reason instanceof ClientClosedError ? 'client-closed' : 'deadline');
}

function httpStatusOf(err: unknown): number | undefined {
  if (typeof err === 'object' && err !== null) {
    const s =
      (err as { status?: unknown; statusCode?: unknown }).status ??
      (err as { statusCode?: unknown }).statusCode;
    if (typeof s === 'number') return s;
  }
  return undefined;
}

/** A log-safe summary of an error: name, message and kind only (never request options). */
export function errorSummary(e: unknown): Record<string, unknown> {
  if (e instanceof Error) {
    const kind = (e as { kind?: unknown }).kind;
    return {
      name: e.name,
      message: e.message.slice(0, 1000),
      ...(typeof kind === 'string' ? { kind } : {}),
    };
  }
  return { message: String(e).slice(0, 1000) };
}
