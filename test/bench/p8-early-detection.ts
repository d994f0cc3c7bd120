// P8: what early detection buys and costs, on the end-to-end harness with the defaults (the same
// fleet as test/e2e/early-detection.test.ts): honest rebuilds of 0.2-110 s run concurrently next to
// lost writes. Rows: wrong forces on honest slow builds (target 0), and the API requests the
// signal costs per honest rebuild and per stall (detect's history reads; force-drift makes none).

import { KubeConfig } from '@kubernetes/client-node';
import { runFleet } from '../harness/fleet.js';
import { createSystem } from '../harness/system.js';
import { deleteAlarm } from '../harness/system/world.js';
import { createRawKube } from './raw-kube.js';
import { percentile } from './stats.js';
import { valueRow, type BenchModule } from './types.js';

const FLEET = {
  honest: 50,
  firstBuildStalls: 10,
  rebuildStalls: 10,
  rounds: 2,
  buildTimeSteps: 12,
};
const NAMESPACE = 'cozy-system';

export const p8: BenchModule = {
  id: 'P8',
  title: 'early detection: wrong forces and cost',
  async run(ctx) {
    const server = await ctx.apiServer();
    const kc = new KubeConfig();
    kc.loadFromFile(server.kubeconfigPath);
    const raw = createRawKube(kc);
    const system = await createSystem({
      kubeConfig: kc,
      pingSeed: 8,
      sourceWatcher: {
        seed: 8,
        concurrency: FLEET.honest + FLEET.firstBuildStalls + FLEET.rebuildStalls,
      },
    });
    try {
      const r = await runFleet(system, { ...FLEET, prefix: 'p8', log: ctx.log });
      const stalls = FLEET.firstBuildStalls + FLEET.rebuildStalls;
      const stallReads = r.historyReads - r.honestHistoryReads;
      const detail = {
        honestAgs: FLEET.honest,
        honestRebuilds: r.honestRebuilds,
        buildTimeRangeS: r.honestBuildTimeRangeMs.map((ms) => ms / 1000),
        stalls,
        stallToForceP50S: percentile([...r.stallToForceMs], 50) / 1000,
        stallToForceP99S: percentile([...r.stallToForceMs], 99) / 1000,
        awaitingOnHonest: r.awaitingOnHonest,
        historyReads: r.historyReads,
        agEvents: r.agEvents,
        wallSeconds: Math.round(r.wallMs / 1000),
      };
      ctx.log(
        `  ${r.honestRebuilds} honest rebuilds, ${r.wrongForces} wrong forces, ${r.historyReads} history reads`,
      );
      return [
        valueRow({
          id: 'P8',
          metric: `wrong forces over ${r.honestRebuilds} concurrent honest rebuilds of 0.2-110 s`,
          value: r.wrongForces,
          unit: 'forces',
          target: '0',
          pass: r.wrongForces === 0 && r.awaitingOnHonest === 0,
          detail,
        }),
        valueRow({
          id: 'P8',
          metric: 'API requests the signal costs per honest rebuild',
          value: r.honestHistoryReads / Math.max(1, r.honestRebuilds),
          unit: 'req',
          target: 'report (1 history read expected)',
          pass: null,
          detail,
        }),
        valueRow({
          id: 'P8',
          metric: 'API requests the signal costs per stall (whole cycle, all builds of the AG)',
          value: stallReads / Math.max(1, stalls),
          unit: 'req',
          target: 'report',
          pass: null,
          detail,
        }),
      ];
    } finally {
      await system.stop();
      await raw.deleteAllAgs(NAMESPACE);
      await raw.deleteAllPackageSources();
      await deleteAlarm(kc);
    }
  },
};
