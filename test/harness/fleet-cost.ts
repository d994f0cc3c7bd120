// `npx tsx test/harness/fleet-cost.ts 24 150`: the harness's own cost as the fleet grows. Runs
// the early-detection fleet (test/harness/fleet.ts: honest rebuilds next to first-build and
// rebuild stalls, one round) on the end-to-end system once per size and prints the wall time
// and the number of clock stops, on a fresh test API server. Measures; asserts nothing.

import { KubeConfig } from '@kubernetes/client-node';
import { performance } from 'node:perf_hooks';
import { startTestCluster } from '../setup/test-cluster.js';
import { runFleet } from './fleet.js';
import { createSystem as createCurrentSystem } from './system.js';

/** A fleet of `total` AGs: two thirds honest, a sixth of each stall kind. */
function fleetOf(total: number) {
  const stalls = Math.max(1, Math.round(total / 6));
  return {
    honest: total - 2 * stalls,
    firstBuildStalls: stalls,
    rebuildStalls: stalls,
    rounds: 1,
    buildTimeSteps: 12,
  };
}

async function main(sizes: number[]): Promise<void> {
  // FLEET_COST_SYSTEM=<module> measures another createSystem (e.g. an older copy) the same way.
  const other = process.env['FLEET_COST_SYSTEM'];
  const createSystem: typeof createCurrentSystem = other
    ? ((await import(other)) as { createSystem: typeof createCurrentSystem }).createSystem
    : createCurrentSystem;
  const { server, tokens } = await startTestCluster();
  try {
    const kc = new KubeConfig();
    kc.loadFromFile(server.kubeconfigPath);
    for (const total of sizes) {
      const system = await createSystem({
        kubeConfig: kc,
        serviceAccountTokens: tokens,
        pingSeed: 8,
        settleTimeoutMs: 600_000,
        sourceWatcher: { seed: 8, concurrency: 20 },
      });
      let settles = 0;
      const settle = system.settle;
      system.clock.setSettle(async () => {
        settles++;
        await settle();
      });
      const t0 = performance.now();
      try {
        const r = await runFleet(system, {
          ...fleetOf(total),
          prefix: `cost${total}`,
          maxVirtualMsPerPhase: 45 * 60_000,
        });
        const wallS = ((performance.now() - t0) / 1000).toFixed(1);
        // Older systems have no counter: their settles all ran through the clock's hook.
        const stops = 'settles' in system ? system.settles : settles;
        // The sources' catch-up lists go through the proxy, tagged 'catch-up' (before ADR 60 as
        // the adapters; the world's own do not, and follow the same rule).
        const lists =
          system.proxy.count({ verb: 'list', clientTag: 'catch-up' }) +
          system.proxy.count({ verb: 'list', clientTag: 'apiserversource' }) +
          system.proxy.count({ verb: 'list', clientTag: 'pingsource' });
        console.log(
          `fleet of ${total} AGs: ${wallS} s wall, ${stops} settles, ` +
            `${(Number(wallS) / Math.max(1, stops)).toFixed(3)} s a settle, ` +
            `${lists} source catch-up lists (${(lists / Math.max(1, stops)).toFixed(1)} a settle); ` +
            `${r.builds} builds, ${r.stalls} stalls, ${r.wrongForces} wrong forces`,
        );
      } finally {
        await system.stop();
      }
    }
  } finally {
    await server.stop();
  }
}

const sizes = process.argv.slice(2).map(Number);
await main(sizes.length > 0 ? sizes : [24, 150]);
