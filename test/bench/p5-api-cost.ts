// P5: API cost, counted by the kube proxy (test/support/kube-proxy.ts) in front of the real test
// API server. The three functions run in this process with their real createApp and adapter, each
// on a proxy kubeconfig tagged with its name; the bench's own writer goes around the proxy.
// Per attempt (issue 21): one AG source-watcher never rebuilds, forced 5 times on a clock the bench
// moves past each backoff, each attempt's protocol requests and Event writes (create, or the
// series' get + patch) counted apart. The idle hour runs on the end-to-end harness's virtual clock
// (the PingSource emulation fires the resync every 5 minutes for 60 virtual minutes), next to
// the old row's 12 pings sent back to back.

import { randomUUID } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  DEFAULT_GRACE_PERIOD_MS,
  DEFAULT_RECOVERY_CONFIG,
} from '../../shared/core/config/recovery-config.js';
import { REASON_FORCED, readyOf } from '../../shared/core/objects/conditions.js';
import { ACTION_FORCE, ACTION_PREFIX } from '../../shared/core/objects/cloudevent-types.js';
import {
  ANNOTATION_ATTEMPTS,
  ANNOTATION_REQUESTED_AT,
} from '../../shared/core/decision/tracking.js';
import type { ArtifactGenerator } from '../../shared/core/objects/types.js';
import { SWEEP_PAGE_SIZE } from '../../functions/detect/sweep.js';
import { backoffFor } from '../../shared/core/decision/backoff.js';
import { startKubeProxy, type KubeProxy, type ProxyCall } from '../support/kube-proxy.js';
import { actionEvent, agResourceEvent, postEvent } from '../support/http-events.js';
import {
  functionKubeClient,
  SettableClock,
  urlOf,
  type RunningFunction,
} from '../harness/functions.js';
import {
  createHealthyAg,
  createHealthyAgs,
  createOwner,
  createStuckAg,
  type RawKube,
} from '../support/raw-kube.js';
import { createOwnedPair } from '../support/apiserver.js';
import { ALARM_NAMESPACE } from '../support/recovery-alarm.js';
import { resyncPing } from '../support/http-events.js';
import type { System } from '../harness/system.js';
import { expectResult, resultOf, untilResult } from './answers.js';
import { benchCluster, viaProxy, withBenchSystem, withDeployedFunctions } from './bench-system.js';
import { listAllAgs } from './paged-list.js';
import { sized } from './smoke.js';
import {
  REPORT_ONLY,
  rowsOf,
  type BenchContext,
  type BenchModule,
  type BenchRow,
} from './types.js';
import { systemClock } from '../../shared/runtime/clock.js';

const NS_FORCE = 'bench-p5-force';
const NS_HEALTHY = 'bench-p5';
export const FORCES = 3;
const healthyAgs = (): number => sized(1_200, 100);
const idleHourPairs = (): number => sized(40, 5);
const NS_ATTEMPTS = 'bench-p5-attempts';
const NS_IDLE = 'bench-p5-idle';
export const OWNED_AGS = 20;
export const IDLE_PINGS = 12;
const WRITE_VERBS = ['create', 'update', 'patch', 'delete', 'deletecollection'] as const;
const row = rowsOf('P5');

const agEvent = (ag: ArtifactGenerator) => agResourceEvent(ag);

/** Posts detect's force of the AG as read (`attempts` before it) to force-drift, as the Broker does. */
const postForce = (
  fns: readonly RunningFunction[],
  ag: ArtifactGenerator,
  attempts: number,
  decidedAt: number,
) => postEvent(urlOf(fns, 'force-drift'), actionEvent(ACTION_FORCE, ag, attempts, decidedAt));

/**
 * force-drift's requests since the proxy's record was cleared: the force's Kubernetes Event
 * writes (issue 15), and the protocol's requests counted apart from them.
 */
function forceDriftCalls(proxy: KubeProxy): { protocol: number; events: ProxyCall[] } {
  const events = proxy.callsMatching({ clientTag: 'force-drift', resource: 'events' });
  return { protocol: proxy.count({ clientTag: 'force-drift' }) - events.length, events };
}

async function requestsPerForce(
  proxy: KubeProxy,
  fns: readonly RunningFunction[],
  raw: RawKube,
  owned = false,
): Promise<BenchRow[]> {
  const perForce: number[] = [];
  const eventWrites: number[] = [];
  const breakdown: Record<string, number>[] = [];
  for (let i = 0; i < FORCES; i++) {
    const name = owned ? `bench-p5-owned-${i}-${Date.now()}` : `stuck-${i}`;
    const owner = owned ? await createOwner(raw, name) : undefined;
    const stuck = await createStuckAg(
      raw,
      NS_FORCE,
      name,
      Date.now() - DEFAULT_GRACE_PERIOD_MS - 60_000,
      owner,
    );
    proxy.clearCalls();
    expectResult('force', await postForce(fns, stuck, 0, Date.now()), 'forced');
    // The state of the world: the marker, the attempt and the bump are all there.
    const after = await raw.getAg(NS_FORCE, name);
    const ready = readyOf(after);
    const annotations = after.metadata?.annotations ?? {};
    if (
      ready?.reason !== REASON_FORCED ||
      annotations[ANNOTATION_ATTEMPTS] !== '1' ||
      annotations[ANNOTATION_REQUESTED_AT] === undefined
    ) {
      throw new Error(`the force did not land: ${JSON.stringify({ ready, annotations })}`);
    }
    // The proxy saw the API server create the force's Kubernetes Event (201).
    const { protocol, events } = forceDriftCalls(proxy);
    if (!events.some((c) => c.verb === 'create' && c.upstreamStatus === 201)) {
      throw new Error(`the force's Event was not created: ${JSON.stringify(events)}`);
    }
    eventWrites.push(events.length);
    perForce.push(protocol);
    breakdown.push(proxy.counters({ clientTag: 'force-drift' }));
  }
  await raw.deleteAllAgs(NS_FORCE);
  const worst = Math.max(...perForce);
  if (owned) {
    // docs/adr/0020: one cached read of the PackageSource more, to leave one being deleted alone.
    return [
      row({
        metric: 'API requests per force, AG owned by a PackageSource (worst of 3)',
        value: worst,
        unit: 'req',
        ...REPORT_ONLY,
        detail: { perForce, breakdown: breakdown[0] },
      }),
    ];
  }
  const worstEvents = Math.max(...eventWrites);
  return [
    row({
      metric: 'API requests per force, without its Event (worst of 3)',
      value: worst,
      unit: 'req',
      target: '<= 4',
      pass: worst <= 4,
      detail: { perForce, breakdown: breakdown[0] },
    }),
    row({
      metric: 'Event writes per force (issue 15, worst of 3)',
      value: worstEvents,
      unit: 'req',
      target: '<= 1 (a first report: one create)',
      pass: worstEvents <= 1,
      detail: { eventWrites },
    }),
  ];
}

async function detectNoOp(
  proxy: KubeProxy,
  fns: readonly RunningFunction[],
  ag: ArtifactGenerator,
): Promise<BenchRow> {
  proxy.clearCalls();
  expectResult('detect no-op', await postEvent(urlOf(fns, 'detect'), agEvent(ag)), 'healthy');
  const calls = proxy.count({ clientTag: 'detect' });
  return row({
    metric: "API requests for detect's no-op event",
    value: calls,
    unit: 'req',
    target: '0',
    pass: calls === 0,
  });
}

async function inStepPackageSource(
  proxy: KubeProxy,
  fns: readonly RunningFunction[],
  raw: RawKube,
): Promise<BenchRow> {
  const name = `bench-p5-instep-${randomUUID().slice(0, 8)}`;
  const ag = await createHealthyAg(raw, NS_HEALTHY, name, { owned: true });
  // Bring it in step, and wait until the API server's cache has caught up.
  await untilResult('surface-stalled', 'in-step', () =>
    postEvent(urlOf(fns, 'surface-stalled'), agEvent(ag)),
  );
  const rvBefore = (await raw.getPackageSource(name)).metadata?.resourceVersion;
  proxy.clearCalls();
  const answer = await postEvent(urlOf(fns, 'surface-stalled'), agEvent(ag));
  expectResult('surface-stalled', answer);
  const calls = proxy.callsMatching({ clientTag: 'surface-stalled' });
  const reads = calls.filter((c) => c.verb === 'get' || c.verb === 'list');
  const cachedReads = reads.filter((c) => /[?&]resourceVersion=0(&|$)/.test(c.path)).length;
  const writes = calls.filter((c) => (WRITE_VERBS as readonly string[]).includes(c.verb)).length;
  const rvAfter = (await raw.getPackageSource(name)).metadata?.resourceVersion;
  return row({
    metric: 'API requests for an in-step PackageSource',
    value: calls.length,
    unit: 'req',
    // ADR 44: the PackageSource alone, checked against the event's AG (was the AG and the
    // PackageSource, <= 2).
    target: '<= 1 cached read, 0 writes',
    pass:
      cachedReads <= 1 &&
      reads.length === cachedReads &&
      writes === 0 &&
      rvBefore === rvAfter &&
      resultOf(answer) === 'in-step',
    detail: {
      cachedReads,
      uncachedReads: reads.length - cachedReads,
      writes,
      calls: proxy.counters({ clientTag: 'surface-stalled' }),
    },
  });
}

async function sweepAndIdle(
  proxy: KubeProxy,
  fns: readonly RunningFunction[],
  raw: RawKube,
  kc: KubeConfig,
  sinkEvents: () => number,
): Promise<BenchRow[]> {
  // Healthy AGs: most without an owner, some owned by an in-step PackageSource.
  // An owned AG is named like its PackageSource (a verified owner, docs/adr/0053).
  const names = Array.from({ length: healthyAgs() }, (_, i) =>
    i < OWNED_AGS ? `bench-p5-owner-${i}` : `healthy-${i}`,
  );
  await createHealthyAgs(raw, NS_HEALTHY, names, 32, async (name) =>
    name.startsWith('bench-p5-owner-') ? createOwner(raw, name) : undefined,
  );
  // Counted around the proxy, with detect's client.
  const total = await listAllAgs(functionKubeClient('detect', kc, systemClock));
  const expectedLists = Math.ceil(total / SWEEP_PAGE_SIZE);

  // One sweep of detect, and one resync of surface-stalled to bring every PackageSource in step.
  proxy.clearCalls();
  expectResult('detect sweep', await postEvent(urlOf(fns, 'detect'), resyncPing()));
  const sweepLists = proxy.count({
    clientTag: 'detect',
    verb: 'list',
    resource: 'artifactgenerators',
  });
  const sweepCalls = proxy.counters({ clientTag: 'detect' });
  expectResult(
    'surface-stalled resync',
    await postEvent(urlOf(fns, 'surface-stalled'), resyncPing()),
  );

  // The idle hour: 12 resync pings each, nothing to do.
  const emitsBefore = sinkEvents();
  proxy.clearCalls();
  for (let i = 0; i < IDLE_PINGS; i++) {
    expectResult('idle detect sweep', await postEvent(urlOf(fns, 'detect'), resyncPing()));
    expectResult(
      'idle surface-stalled resync',
      await postEvent(urlOf(fns, 'surface-stalled'), resyncPing()),
    );
  }
  const writes = proxy.count({ verb: [...WRITE_VERBS] });
  const emits = sinkEvents() - emitsBefore;
  return [
    row({
      metric: `list calls per detect sweep (${total.toLocaleString('en-US')} AGs)`,
      value: sweepLists,
      unit: 'calls',
      target: `= ceil(N/${SWEEP_PAGE_SIZE}) = ${expectedLists}`,
      pass: sweepLists === expectedLists,
      detail: { agCount: total, calls: sweepCalls },
    }),
    row({
      metric: `writes over ${IDLE_PINGS} resync pings sent back to back, detect + surface-stalled (not an hour: see the virtual-clock row)`,
      value: writes,
      unit: 'writes',
      target: '0',
      pass: writes === 0 && emits === 0,
      detail: {
        emits,
        calls: {
          detect: proxy.counters({ clientTag: 'detect' }),
          'surface-stalled': proxy.counters({ clientTag: 'surface-stalled' }),
        },
      },
    }),
  ];
}

export const p5: BenchModule = {
  id: 'P5',
  title: 'API cost',
  async run(ctx) {
    const { kc, raw } = await benchCluster(ctx);
    const proxy = await startKubeProxy(kc);
    const rows: BenchRow[] = [];
    try {
      await withDeployedFunctions(viaProxy(proxy), async (fns, sink) => {
        rows.push(...(await requestsPerForce(proxy, fns, raw)));
        rows.push(...(await requestsPerForce(proxy, fns, raw, true)));
        const noop = await createHealthyAg(raw, NS_HEALTHY, 'noop', { owned: false });
        rows.push(await detectNoOp(proxy, fns, noop));
        rows.push(await inStepPackageSource(proxy, fns, raw));
        ctx.log(`  creating ${healthyAgs()} healthy AGs`);
        rows.push(...(await sweepAndIdle(proxy, fns, raw, kc, () => sink.events.length)));
      });
      ctx.log('  one AG forced 5 times');
      rows.push(...(await requestsPerAttempt(proxy, raw)));
    } finally {
      await proxy.stop();
      await raw.deleteAllAgs(NS_HEALTHY).catch(() => undefined);
    }
    // The harness lists the whole world; the 1,200 AGs above are gone by now.
    ctx.log('  an idle hour on the virtual clock');
    rows.push(await idleHourVirtual(ctx));
    return rows;
  },
};

/**
 * One AG that source-watcher never rebuilds (the marker stays: "source-watcher never answers"),
 * forced attempt after attempt, each when its backoff has passed on the functions' clock. Per
 * attempt: force-drift's requests without its Event writes, and the Event writes (a new step is a
 * create; a repeat of a step counts up the series: get + patch).
 */
async function requestsPerAttempt(proxy: KubeProxy, raw: RawKube): Promise<BenchRow[]> {
  const cfg = DEFAULT_RECOVERY_CONFIG;
  // The functions read time only from this clock, which the bench moves past each backoff.
  const clock = new SettableClock(Date.now());
  const name = `attempts-${randomUUID().slice(0, 8)}`;
  try {
    const perAttempt = await withDeployedFunctions(
      viaProxy(proxy),
      async (fns) => {
        await createStuckAg(raw, NS_ATTEMPTS, name, clock.now() - DEFAULT_GRACE_PERIOD_MS - 60_000);
        const counted: {
          attempt: number;
          protocol: number;
          events: number;
          eventVerbs: string[];
        }[] = [];
        for (let attempt = 1; attempt <= cfg.maxAttempts; attempt++) {
          if (attempt > 1) clock.advance(backoffFor(attempt - 1, cfg) + 1_000);
          const before = await raw.getAg(NS_ATTEMPTS, name);
          proxy.clearCalls();
          const answer = await postForce(fns, before, attempt - 1, clock.now());
          expectResult(`force attempt ${attempt}`, answer, 'forced');
          const after = await raw.getAg(NS_ATTEMPTS, name);
          const got = after.metadata?.annotations?.[ANNOTATION_ATTEMPTS];
          if (got !== String(attempt)) {
            throw new Error(`attempt ${attempt}: the AG says attempts=${String(got)}`);
          }
          const { protocol, events } = forceDriftCalls(proxy);
          counted.push({
            attempt,
            protocol,
            events: events.length,
            eventVerbs: events.map((c) => `${c.verb} ${c.upstreamStatus ?? ''}`.trim()),
          });
        }
        return counted;
      },
      clock,
    );
    const total = perAttempt.reduce((n, a) => n + a.protocol + a.events, 0);
    return [
      ...perAttempt.map((a) =>
        row({
          metric: `force attempt ${a.attempt}/${cfg.maxAttempts}: API requests without its Event (+ ${a.events} Event write(s))`,
          value: a.protocol,
          unit: 'req',
          target: '<= 4',
          pass: a.protocol <= 4,
          detail: { eventWrites: a.events, eventCalls: a.eventVerbs },
        }),
      ),
      row({
        metric: `a whole 5-force cycle: API requests with the Event writes (source-watcher never rebuilds)`,
        value: total,
        unit: 'req',
        ...REPORT_ONLY,
        detail: { perAttempt },
      }),
    ];
  } finally {
    await raw.deleteAllAgs(NS_ATTEMPTS).catch(() => undefined);
  }
}

/**
 * The idle hour on the end-to-end harness's virtual clock: healthy owned pairs, settled, then 60
 * virtual minutes in which the PingSource emulation fires the resync every 5 minutes (with its
 * jitter). Every write by the functions, every emit, and the resyncs fired are counted.
 */
function idleHourVirtual(ctx: BenchContext): Promise<BenchRow> {
  return withBenchSystem(ctx, NS_IDLE, 5, {}, (system, { kc }) => idleHour(system, kc), 'tolerant');
}

async function idleHour(system: System, kc: KubeConfig): Promise<BenchRow> {
  const pairs = idleHourPairs();
  const keys: string[] = [];
  for (let i = 0; i < pairs; i++) {
    const name = `idle-${i}`;
    await createOwnedPair({ name, namespace: NS_IDLE }, kc);
    keys.push(`${NS_IDLE}/${name}`);
  }
  await system.runUntil(
    () => keys.every((k) => system.sim.reconcilesOf(k).some((r) => r.outcome === 'Built')),
    { maxVirtualMs: 5 * 60_000, what: 'every idle AG built' },
  );
  // Past any follow-up the first builds armed, so the hour starts idle.
  await system.advance(5 * 60_000);
  const fnTags = ['detect', 'force-drift', 'surface-stalled'];
  const resyncsFired = () => system.knative.pings.firesOf(ALARM_NAMESPACE, 'resync').length;
  const callsBefore = system.proxy.calls.length;
  const writesBefore = system.writesBy(fnTags).length;
  const ingestedBefore = system.knative.broker.ingested.length;
  const resyncsBefore = resyncsFired();
  await system.advance(60 * 60_000);
  const hour = system.proxy.calls.slice(callsBefore);
  const writes = system.writesBy(fnTags).slice(writesBefore);
  const resyncs = resyncsFired() - resyncsBefore;
  const actions = system.knative.broker.ingested
    .slice(ingestedBefore)
    .filter((r) => r.event.type.startsWith(ACTION_PREFIX)).length;
  const byFn = Object.fromEntries(
    fnTags.map((t) => [t, hour.filter((c) => c.clientTag === t).length]),
  );
  return row({
    metric: `writes in an idle hour on the virtual clock (${pairs} healthy pairs, ${resyncs} resyncs fired by the PingSource emulation)`,
    value: writes.length,
    unit: 'writes',
    target: '0 writes, 0 action events, 12 resyncs',
    pass: writes.length === 0 && actions === 0 && resyncs === 12,
    detail: { resyncs, actionEvents: actions, requestsByFunction: byFn, pairs },
  });
}
