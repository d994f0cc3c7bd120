// The deployed detect's usual wake-up (issue 21): scaled to zero, woken by the resync PingSource
// every 5 minutes, and the sweep loads @kubernetes/client-node at once. Spawn `node
// dist/functions/detect/main.js` against the real test API server, post the resync ping until it
// is answered: spawn -> the sweep answered (client load, TLS, the paged list, the alarm), then
// the process's RSS. The AGs are healthy (the sweep emits nothing; the sink counts).

import { HTTP } from 'cloudevents';
import { startCountingServer } from './counting-server.js';
import { spawnServer, timeToFirstAnswer } from '../harness/functions.js';
import { createHealthyAgs } from '../support/raw-kube.js';
import { resyncPing } from '../support/http-events.js';
import { expectResult } from './answers.js';
import { benchCluster } from './bench-system.js';
import type { BenchContext } from './types.js';

/** Healthy AGs in the cluster while the sweep runs (a Cozystack install has tens). */
export const WAKE_AGS = 100;

export interface WakeSample {
  /** spawn -> the resync ping answered 200. */
  readonly ms: number;
  /** RSS of the process after it answered the sweep. */
  readonly rssKb: number;
}

/** Creates WAKE_AGS healthy AGs in `namespace`, runs `runs` wake-ups, deletes the AGs. */
export async function measureResyncWake(
  ctx: BenchContext,
  namespace: string,
  runs: number,
): Promise<{ samples: WakeSample[]; ags: number }> {
  const { server, raw } = await benchCluster(ctx);
  const scripts = await ctx.scripts();
  await createHealthyAgs(
    raw,
    namespace,
    Array.from({ length: WAKE_AGS }, (_, i) => `wake-${i}`),
    16,
  );
  const sink = await startCountingServer(202);
  try {
    const samples: WakeSample[] = [];
    // The resync PingSource's event (no data), in binary mode.
    const ping = HTTP.binary(resyncPing({}));
    const env = {
      KUBECONFIG: server.kubeconfigPath,
      K_SINK: `${sink.url}/`,
      LOG_LEVEL: 'warn',
      ...scripts.detectEnv,
    };
    for (let i = 0; i < runs; i++) {
      const detect = await spawnServer(scripts.detect, env);
      try {
        const { ms, answer } = await timeToFirstAnswer(
          detect,
          ping.headers as Record<string, string>,
          String(ping.body),
        );
        expectResult('the resync sweep', answer, 'swept');
        samples.push({ ms, rssKb: await detect.rssKb() });
      } finally {
        await detect.stop();
      }
    }
    if (sink.total() !== 0) throw new Error(`the sweep of healthy AGs emitted ${sink.total()}`);
    return { samples, ags: WAKE_AGS };
  } finally {
    await sink.close();
    await raw.deleteAllAgs(namespace);
  }
}
