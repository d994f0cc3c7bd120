// An app on 127.0.0.1, served by the product's listen() (as main.ts serves it) on a free port.

import type { RequestListener } from 'node:http';
import { createLogger, type Logger } from '../../../shared/runtime/logger.js';
import { listen } from '../../../shared/runtime/serve.js';

export interface Served {
  /** http://127.0.0.1:PORT/ */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export async function serve(app: RequestListener, logger?: Logger): Promise<Served> {
  const running = await listen(app, {
    port: 0,
    host: '127.0.0.1',
    logger: logger ?? createLogger({ name: 'served', level: 'silent' }),
    drainTimeoutMs: 2000,
  });
  return {
    url: `http://127.0.0.1:${running.port}/`,
    port: running.port,
    close: async () => {
      const closing = running.close();
      // Idle keep-alive sockets (a Broker's, a test's) would otherwise hold close() until they
      // time out.
      running.server.closeAllConnections();
      await closing;
    },
  };
}
