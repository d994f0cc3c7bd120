// P6: detect's sweep of 10,000 healthy AGs against the real test API server, timed from posting
// the resync ping to its answer, against the bare paginated list done by the same client on the
// same read path: uncached (from etcd), 500 a page, as the sweep reads (issue 21: the old baseline
// read the watch cache, which ignores `limit`, so the ratio mixed two read paths). Both sides'
// page counts are counted on the client and reported in the row. Alternating order, median of
// RUNS each. AG creation is reported apart.
// The AGs are compact (one source, one artifact, ~2 KB): the API server's cost of creating the
// realistic 8 KB AG would blow the time budget, and smaller objects make the list cheaper, so
// detect's own per-AG work weighs more in the ratio (the stricter case).

import { SWEEP_PAGE_SIZE } from '../../functions/detect/sweep.js';
import type { KubePort } from '../../shared/kube/port.js';
import { postEvent } from '../support/http-events.js';
import { functionKubeClient, urlOf } from '../harness/functions.js';
import { createHealthyAgs } from '../support/raw-kube.js';
import { resyncPing } from '../support/http-events.js';
import { expectResult } from './answers.js';
import { benchCluster, withDeployedFunctions } from './bench-system.js';
import { listAllAgs } from './paged-list.js';
import { median } from './stats.js';
import { sized } from './smoke.js';
import { ratioRow, REPORT_ONLY, valueRow, type BenchModule } from './types.js';
import { systemClock } from '../../shared/runtime/clock.js';

/** 10,000 (the smoke: 500). */
const agCount = (): number => sized(10_000, 500);
/**
 * Even, so that with the S L L S order every second measurement falls on each side equally:
 * consecutive timings alternate slow/fast (about 1.2 s vs 0.75 s here, whichever path runs),
 * and an odd count gave one side more slow slots.
 */
const runs = (): number => sized(6, 2);
export const CONCURRENCY = 32;
const NAMESPACE = 'bench-p6';

export const p6: BenchModule = {
  id: 'P6',
  title: 'sweep of 10,000 AGs',
  async run(ctx) {
    const { kc, raw } = await benchCluster(ctx);
    const AG_COUNT = agCount();
    const RUNS = runs();

    ctx.log(
      `  creating ${AG_COUNT.toLocaleString('en-US')} healthy AGs (concurrency ${CONCURRENCY})`,
    );
    const t0 = performance.now();
    await createHealthyAgs(
      raw,
      NAMESPACE,
      Array.from({ length: AG_COUNT }, (_, i) => `ag-${i}`),
      CONCURRENCY,
    );
    const creationSec = (performance.now() - t0) / 1000;
    ctx.log(`  created in ${creationSec.toFixed(1)} s`);

    // One client, shared by detect and the bare loop; its AG list calls are counted (pages).
    const pages = { count: 0 };
    const kube = countingLists(functionKubeClient('detect', kc, systemClock), pages);
    const pagesOf = async (run: () => Promise<void>): Promise<number> => {
      const before = pages.count;
      await run();
      return pages.count - before;
    };
    let sweepPages = 0;
    let listPages = 0;
    const sweepMs: number[] = [];
    const listMs: number[] = [];
    let listed = 0;
    try {
      await withDeployedFunctions(
        () => kube,
        async (fns, sink) => {
          const sweep = async (): Promise<void> => {
            const start = performance.now();
            const answer = await postEvent(urlOf(fns, 'detect'), resyncPing({}));
            sweepMs.push(performance.now() - start);
            expectResult('sweep', answer);
          };
          const list = async (): Promise<void> => {
            const start = performance.now();
            listed = await listAllAgs(kube);
            listMs.push(performance.now() - start);
          };
          // Warm both paths once (connections, JIT), then alternate.
          listPages = await pagesOf(list);
          sweepPages = await pagesOf(sweep);
          sweepMs.length = 0;
          listMs.length = 0;
          for (let i = 0; i < RUNS; i++) {
            if (i % 2 === 0) {
              await sweep();
              await list();
            } else {
              await list();
              await sweep();
            }
          }
          if (sweepPages !== listPages) {
            throw new Error(`the sweep read ${sweepPages} pages, the bare list ${listPages}`);
          }
          if (listed < AG_COUNT)
            throw new Error(`the bare list saw ${listed} AGs, expected >= ${AG_COUNT}`);
          if (sink.events.length !== 0)
            throw new Error(`the sweep of healthy AGs emitted ${sink.events.length} events`);
        },
      );
    } finally {
      // The rows that follow (P8's fleet lists the world at every settle, and its detect sweeps
      // every AG) must not carry these 10,000 AGs.
      const d0 = performance.now();
      await raw.deleteAllAgs(NAMESPACE).then(
        () => ctx.log(`  deleted the AGs in ${((performance.now() - d0) / 1000).toFixed(1)} s`),
        // The measurement stands; only what follows it runs on a fuller server.
        (e: unknown) => ctx.log(`  deleting the AGs failed: ${String(e)}`),
      );
    }
    const round = (xs: number[]): number[] => xs.map((x) => Math.round(x));
    ctx.log(`  sweep: ${round(sweepMs).join(' ')} ms; bare list: ${round(listMs).join(' ')} ms`);
    return [
      ratioRow({
        id: 'P6',
        metric: `detect sweep of ${listed.toLocaleString('en-US')} AGs vs the same uncached paged list (${sweepPages} / ${listPages} pages of ${SWEEP_PAGE_SIZE}; median of ${RUNS})`,
        value: median(sweepMs),
        baseline: median(listMs),
        unit: 'ms',
        target: 'ratio <= 1.2',
        maxRatio: 1.2,
        detail: {
          sweepMs: round(sweepMs),
          bareListMs: round(listMs),
          agCount: listed,
          sweepPages,
          bareListPages: listPages,
          pageSize: SWEEP_PAGE_SIZE,
          readPath: 'uncached (etcd), limit 500, continue tokens: both sides',
        },
      }),
      valueRow({
        id: 'P6',
        metric: `creating ${AG_COUNT.toLocaleString('en-US')} AGs with status (setup)`,
        value: creationSec,
        unit: 's',
        ...REPORT_ONLY,
        detail: { concurrency: CONCURRENCY, requests: AG_COUNT * 2 },
      }),
    ];
  },
};

/** `kube` with its AG list calls counted (one call = one page); every other call passes through. */
function countingLists(kube: KubePort, pages: { count: number }): KubePort {
  return new Proxy(kube, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      if (prop !== 'listArtifactGenerators') return value.bind(target);
      return async (...args: unknown[]): Promise<unknown> => {
        const page: unknown = await value.apply(target, args);
        pages.count++;
        return page;
      };
    },
  });
}
