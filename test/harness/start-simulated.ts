// `npm start` without a kubeconfig: a real test API server, the source-watcher simulator losing
// the Ready write of a few dozen AGs (one of them for good), the functions and the Knative
// emulation, on a fast-forwarded clock; prints progress and a summary (see start.ts). Loaded by
// start.ts only for this mode: its fixtures come from the test support (which loads vitest).

import { startTestCluster, type TestCluster } from '../setup/test-cluster.js';
import {
  createArtifactGenerator,
  createPackageSource,
  makeArtifactGenerator,
  makePackageSource,
} from '../support/apiserver.js';
import { createSystem, type AgProgress, type ProgressEvent, type System } from './system.js';

const OWNED = 30;
const UNOWNED = 3;
const STALLED_ONCE = 20;
const NAMESPACE = 'cozy-system';
const FLUX_NAMESPACE = 'flux-apps';
const MAX_VIRTUAL_MS = 15 * 60_000;

type Say = (line: string) => void;

function clockText(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

function describeEvent(e: ProgressEvent, maxAttempts: number): string | undefined {
  switch (e.kind) {
    case 'stall':
      return 'stuck: the Ready write was lost (fluxcd/pkg#934)';
    case 'force':
      return `forced (attempt ${e.attempt ?? '?'}/${maxAttempts})`;
    case 'recovered':
      return 'recovered: Ready=True, tracking cleared';
    case 'stalled':
      return 'PackageSource Ready=False/SourceWatcherStalled';
    case 'failed':
      return `failed honestly (${e.reason ?? 'unknown reason'})`;
    default:
      return undefined;
  }
}

export async function runSimulated(env: Record<string, string>, say: Say): Promise<void> {
  const maxAttempts = Number(env['RECOVERY_MAX_ATTEMPTS'] ?? '5');
  const wallStart = Date.now();
  say('source-watcher recovery: a simulated cluster on a fast-forwarded clock');
  say(
    'starting a real test cluster: kube-apiserver (RBAC), kube-controller-manager, etcd (the first run builds them from Go modules: about 10 minutes on 2 cores, once) ...',
  );
  const cluster: TestCluster = await startTestCluster();
  const server = cluster.server;
  let system: System | undefined;
  const stop = async (): Promise<void> => {
    await system?.stop();
    await server.stop();
  };
  process.once('SIGINT', () => {
    void stop().then(() => process.exit(130));
  });
  try {
    const kc = cluster.kubeConfig;

    let t0 = 0;
    system = await createSystem({
      kubeConfig: kc,
      serviceAccountTokens: cluster.tokens,
      env,
      onProgress: (e) => {
        const text = describeEvent(e, maxAttempts);
        if (text !== undefined && t0 !== 0)
          say(`[+${clockText(e.at - t0)}] ${e.ag.padEnd(28)} ${text}`);
      },
    });
    t0 = system.clock.now();

    const owned = Array.from({ length: OWNED }, (_, i) => `pkg-${String(i + 1).padStart(2, '0')}`);
    const unowned = Array.from(
      { length: UNOWNED },
      (_, i) => `app-${String(i + 1).padStart(2, '0')}`,
    );
    const stalledOnce = [...owned.slice(0, STALLED_ONCE), unowned[0] ?? ''].map((n, i) =>
      i < STALLED_ONCE ? `${NAMESPACE}/${n}` : `${FLUX_NAMESPACE}/${n}`,
    );
    const neverAnswers = `${NAMESPACE}/${owned[OWNED - 1] ?? ''}`;
    for (const key of stalledOnce) system.sim.loseConditionsWrite(key, { times: 1 });
    system.sim.loseConditionsWrite(neverAnswers);
    // Build times spread so the stalls do not all land on the same second.
    system.sim.setBuildTime(1500);

    say(
      `creating ${OWNED} PackageSources with their ArtifactGenerators in ${NAMESPACE} and ${UNOWNED} plain Flux AGs in ${FLUX_NAMESPACE};`,
    );
    say(
      `the simulator loses the Ready write of ${stalledOnce.length} of them once, and of ${neverAnswers} every time.`,
    );
    say('');
    for (const name of owned) {
      const ps = await createPackageSource(makePackageSource({ name }), kc);
      await createArtifactGenerator(
        makeArtifactGenerator({
          name,
          namespace: NAMESPACE,
          owner: { name, uid: ps.metadata?.uid ?? '' },
        }),
        kc,
      );
    }
    for (const name of unowned) {
      await createArtifactGenerator(makeArtifactGenerator({ name, namespace: FLUX_NAMESPACE }), kc);
    }

    const watched = [...stalledOnce, neverAnswers];
    const done = (p: AgProgress): boolean =>
      p.recoveries.length > 0 || p.stalledAt !== null || p.giveUps.length > 0;
    await system.runUntil(
      () =>
        watched.every((ag) => done(system!.progress.of(ag))) &&
        system!.progress.of(neverAnswers).stalledAt !== null,
      {
        maxVirtualMs: MAX_VIRTUAL_MS,
        stepMs: 5000,
        what: 'every stalled AG recovered or surfaced as SourceWatcherStalled',
      },
    );

    say('');
    printSummary(system, watched, maxAttempts, say);
    const writes = system.writesBy(['detect', 'force-drift', 'surface-stalled']).length;
    say('');
    say(
      `simulated ${clockText(system.clock.now() - t0)} in ${((Date.now() - wallStart) / 1000).toFixed(1)} s of wall time; ${writes} writes by the functions.`,
    );
  } finally {
    await stop();
  }
}

function printSummary(system: System, watched: string[], maxAttempts: number, say: Say): void {
  const rows = watched.map((ag) => {
    const p = system.progress.of(ag);
    const stall = p.stalls[0];
    const outcomeAt = p.stalledAt ?? p.recoveries[p.recoveries.length - 1] ?? null;
    return {
      ag,
      owner: p.packageSource ?? '(none)',
      forces: `${p.forces.length}/${maxAttempts}`,
      outcome:
        p.stalledAt !== null
          ? 'SourceWatcherStalled'
          : p.recoveries.length > 0
            ? 'recovered'
            : 'pending',
      time: stall !== undefined && outcomeAt !== null ? clockText(outcomeAt - stall) : '-',
    };
  });
  const header = ['ArtifactGenerator', 'PackageSource', 'forces', 'outcome', 'stall → outcome'];
  const widths = header.map((h, i) =>
    Math.max(
      h.length,
      ...rows.map((r) => [r.ag, r.owner, r.forces, r.outcome, r.time][i]?.length ?? 0),
    ),
  );
  const line = (cells: string[]): string =>
    cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ');
  say(line(header));
  say(line(widths.map((w) => '-'.repeat(w))));
  for (const r of rows) say(line([r.ag, r.owner, r.forces, r.outcome, r.time]));
  const recovered = rows.filter((r) => r.outcome === 'recovered').length;
  const stalled = rows.filter((r) => r.outcome === 'SourceWatcherStalled').length;
  say('');
  say(
    `${recovered} recovered, ${stalled} SourceWatcherStalled, ${rows.length - recovered - stalled} pending.`,
  );
}
