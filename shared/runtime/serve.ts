// Listening and graceful shutdown. On SIGTERM (Knative sends it after draining the route) the
// server turns unready, stops accepting, lets in-flight requests finish, then exits.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestListener } from 'node:http';
import type { Logger } from './logger.js';

export interface RunningServer {
  readonly server: Server;
  readonly port: number;
  /** Stop accepting, wait for in-flight requests (bounded by the timeout), close. */
  close(): Promise<void>;
}

export async function listen(
  handler: RequestListener,
  opts: { port: number; host?: string; logger: Logger; drainTimeoutMs?: number },
): Promise<RunningServer> {
  const server = createServer(handler);
  // Keep-alive sockets must not hold the process open after close().
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        opts.logger.warn({ drainTimeoutMs: opts.drainTimeoutMs ?? 30_000 }, 'drain timed out');
        server.closeAllConnections();
      }, opts.drainTimeoutMs ?? 30_000);
      timer.unref();
      // Keep-alive sockets become idle as their in-flight requests finish: close them then,
      // rather than waiting out keepAliveTimeout.
      const sweeper = setInterval(() => server.closeIdleConnections(), 50);
      sweeper.unref();
      server.close(() => {
        clearTimeout(timer);
        clearInterval(sweeper);
        resolve();
      });
      server.closeIdleConnections();
    });
    return closing;
  };
  return { server, port, close };
}

/** Wires SIGTERM/SIGINT to a graceful close, then `beforeExit` (the metrics' last flush), then exit. */
export function exitOnSignals(
  running: RunningServer,
  logger: Logger,
  onDraining: () => void,
  beforeExit: () => Promise<void> = () => Promise.resolve(),
): void {
  let done = false;
  const stop = (signal: string): void => {
    if (done) return;
    done = true;
    onDraining();
    logger.info({ signal }, 'shutting down');
    void running
      .close()
      .then(() => beforeExit().catch(() => undefined))
      .then(() => {
        logger.info({}, 'shut down');
        logger.flush?.();
        process.exit(0);
      });
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}
