// The environment for running dist/functions/detect/main.js without a real API server: its
// kubeconfig points at a counting HTTP server (the no-op path must send it nothing) and K_SINK at
// a counting sink (the no-op path must emit nothing).

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubeconfigFor, startCountingServer, type CountingServer } from './counting-server.js';

export interface NoApiDetect {
  /** Environment for the detect process (PORT is added by spawnServer). */
  readonly env: Record<string, string>;
  /** Stands in for the Kubernetes API. */
  readonly api: CountingServer;
  /** Stands in for the Broker. */
  readonly sink: CountingServer;
  close(): Promise<void>;
}

export async function startNoApiDetect(): Promise<NoApiDetect> {
  const api = await startCountingServer(503);
  const sink = await startCountingServer(202);
  const dir = await mkdtemp(join(tmpdir(), 'swr-bench-kubeconfig-'));
  const kubeconfigPath = join(dir, 'kubeconfig');
  await writeFile(kubeconfigPath, kubeconfigFor(api.url), { mode: 0o600 });
  return {
    env: { KUBECONFIG: kubeconfigPath, K_SINK: `${sink.url}/`, LOG_LEVEL: 'warn' },
    api,
    sink,
    async close() {
      await Promise.all([api.close(), sink.close()]);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The echo baseline's environment (the same log level for symmetry; it logs nothing). */
export const ECHO_ENV: Record<string, string> = { LOG_LEVEL: 'warn' };
