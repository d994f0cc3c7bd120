// The Knative emulation against the real test API server: the ApiServerSource (Resource mode)
// turns a real watch into Knative's exact CloudEvents and sends nothing for objects that existed
// before it started; the PingSource adapter follows PingSource objects created, patched and
// deleted at runtime, on a virtual clock, with Knative's jitter and pick-up lag; and the wired
// emulation routes both through the Triggers in knative/.

import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  APISERVER_ADD,
  APISERVER_DELETE,
  APISERVER_UPDATE,
  PING,
  TIMER_ALARM,
  TIMER_EXTENSION,
} from '../../shared/core/objects/cloudevent-types.js';
import type { PingSource } from '../../shared/kube/port.js';
import { VirtualClock } from '../harness/virtual-clock.js';
import {
  AG_RESOURCE,
  ApiServerSource,
  createKnativeEmulation,
  PingScheduler,
  startEventRecorder,
} from '../harness/knative/index.js';
import type { AnyEvent, EventRecorder, KnativeEmulation } from '../harness/knative/index.js';
import {
  createArtifactGenerator,
  ensureNamespace,
  getArtifactGenerator,
  makeArtifactGenerator,
  MERGE_PATCH,
  testKubeConfig,
  uniqueName,
} from '../support/apiserver.js';
import { deleteSimAgs } from './sim-world.js';

const kubeConfig = testKubeConfig();
const raw = kubeConfig.makeApiClient(CustomObjectsApi);
const AG = { group: AG_RESOURCE.group, version: AG_RESOURCE.version, plural: AG_RESOURCE.plural };
const PINGS = { group: 'sources.knative.dev', version: 'v1', plural: 'pingsources' };
const START = Date.parse('2026-01-01T00:00:00Z');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

type Obj = { metadata: { name: string; namespace: string; resourceVersion: string } } & Record<
  string,
  unknown
>;

/** The AG `name` in `namespace`, as the control plane's door makes it. */
const createAg = (namespace: string, name: string) =>
  createArtifactGenerator(makeArtifactGenerator({ namespace, name }), kubeConfig);

function pingBody(name: string, schedule: string, extensions?: Record<string, string>): PingSource {
  return {
    apiVersion: 'sources.knative.dev/v1',
    kind: 'PingSource',
    metadata: { name },
    spec: {
      schedule,
      timezone: 'UTC',
      contentType: 'application/json',
      data: `{"alarm":"${name}"}`,
      sink: { ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default' } },
      ...(extensions !== undefined ? { ceOverrides: { extensions } } : {}),
    },
  };
}

async function createPing(
  namespace: string,
  name: string,
  schedule: string,
  extensions?: Record<string, string>,
): Promise<void> {
  await raw.createNamespacedCustomObject({
    ...PINGS,
    namespace,
    body: pingBody(name, schedule, extensions),
  });
}

async function patchPingSchedule(namespace: string, name: string, schedule: string): Promise<void> {
  await raw.patchNamespacedCustomObject(
    { ...PINGS, namespace, name, body: { spec: { schedule } } },
    MERGE_PATCH,
  );
}

async function deletePing(namespace: string, name: string): Promise<void> {
  await raw.deleteNamespacedCustomObject({ ...PINGS, namespace, name });
}

const iso = (ms: number | null | undefined): string | undefined =>
  ms === null || ms === undefined ? undefined : new Date(ms).toISOString();

// ---- ApiServerSource ---------------------------------------------------------------------------

describe('ApiServerSource emulation (Resource mode, real watch)', () => {
  let namespace: string;
  let sink: EventRecorder;
  let source: ApiServerSource | undefined;
  const eventsHere = (): AnyEvent[] => sink.events().filter((e) => e.namespace === namespace);

  beforeEach(async () => {
    namespace = uniqueName('kn-src');
    await ensureNamespace(namespace);
    sink = await startEventRecorder();
  });

  afterEach(async () => {
    await source?.stop();
    source = undefined;
    await sink.close();
    await deleteSimAgs(namespace);
  });

  async function settle(): Promise<void> {
    await source?.caughtUp();
    await source?.idle();
  }

  it('sends nothing for an AG that existed before it started; a create sends one exact add', async () => {
    await createAg(namespace, 'before');
    source = new ApiServerSource({ kubeConfig, sinkUrl: sink.url });
    await source.start();
    await settle();
    expect(eventsHere()).toEqual([]);

    const created = await createAg(namespace, 'after');
    await settle();
    const events = eventsHere();
    expect(events).toHaveLength(1);
    const ev = events[0];
    const server = kubeConfig.getCurrentCluster()?.server;
    expect(server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(ev).toMatchObject({
      specversion: '1.0',
      type: APISERVER_ADD,
      source: server,
      subject: `/apis/source.extensions.fluxcd.io/v1beta1/namespaces/${namespace}/artifactgenerators/after`,
      datacontenttype: 'application/json',
      kind: 'ArtifactGenerator',
      apiversion: 'source.extensions.fluxcd.io/v1beta1',
      name: 'after',
      namespace,
    });
    expect(ev?.id).toMatch(UUID);
    // The whole object, exactly as the API server stored it.
    expect(ev?.data).toEqual(created);
    expect(ev?.data).toEqual(await getArtifactGenerator({ namespace, name: 'after' }, kubeConfig));
    // Sent in binary mode.
    const req = sink.requests.find((r) => r.event?.id === ev?.id);
    expect(req?.headers['ce-type']).toBe(APISERVER_ADD);
    expect(req?.headers['content-type']).toBe('application/json');
  });

  it('an update of a new or pre-existing AG sends an update with the new object; a delete sends a delete', async () => {
    await createAg(namespace, 'old');
    source = new ApiServerSource({ kubeConfig, sinkUrl: sink.url });
    await source.start();
    await createAg(namespace, 'fresh');
    await settle();

    const patchedOld = (await raw.patchNamespacedCustomObject(
      { ...AG, namespace, name: 'old', body: { metadata: { labels: { touched: 'yes' } } } },
      MERGE_PATCH,
    )) as Obj;
    const patchedFresh = (await raw.patchNamespacedCustomObject(
      { ...AG, namespace, name: 'fresh', body: { metadata: { annotations: { a: 'b' } } } },
      MERGE_PATCH,
    )) as Obj;
    await raw.deleteNamespacedCustomObject({ ...AG, namespace, name: 'fresh' });
    await settle();

    const events = eventsHere();
    expect(events.map((e) => [e.type, e.name])).toEqual([
      [APISERVER_ADD, 'fresh'],
      [APISERVER_UPDATE, 'old'],
      [APISERVER_UPDATE, 'fresh'],
      [APISERVER_DELETE, 'fresh'],
    ]);
    expect(events[1]?.data).toEqual(patchedOld);
    expect(events[2]?.data).toEqual(patchedFresh);
    const deleted = events[3]?.data as Obj | undefined;
    expect(deleted?.metadata.name).toBe('fresh');
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
  });

  it('retries a failing sink a few times, then drops the event', async () => {
    const failing = await startEventRecorder(() => ({ status: 503 }));
    try {
      source = new ApiServerSource({ kubeConfig, sinkUrl: failing.url, retryDelayMs: 5 });
      await source.start();
      await createAg(namespace, 'unlucky');
      await settle();
      const mine = failing.events().filter((e) => e.namespace === namespace);
      expect(mine).toHaveLength(5);
      expect(new Set(mine.map((e) => e.id)).size).toBe(1);
      const record = source.sent.find((s) => s.event.id === mine[0]?.id);
      expect(record).toMatchObject({ outcome: 'dropped', attempts: 5, status: 503 });
    } finally {
      await source?.stop();
      source = undefined;
      await failing.close();
    }
  });
});

// ---- PingSource adapter ------------------------------------------------------------------------

describe('PingSource emulation on a virtual clock', () => {
  let namespace: string;
  let sink: EventRecorder;
  let clock: VirtualClock;
  let pings: PingScheduler;

  beforeEach(async () => {
    namespace = uniqueName('kn-ping');
    await ensureNamespace(namespace);
    sink = await startEventRecorder();
    clock = new VirtualClock({ start: START });
    pings = new PingScheduler({ clock, sinkUrl: sink.url, kubeConfig, namespace, seed: 3 });
    clock.setSettle(async () => {
      await pings.caughtUp();
      await pings.idle();
    });
    await pings.start();
  });

  afterEach(async () => {
    await pings.stop();
    // stop() leaves no virtual timer behind (ticks, jittered sends, pick-ups).
    expect(clock.pendingTimers).toBe(0);
    await sink.close();
    const list = (await raw.listNamespacedCustomObject({ ...PINGS, namespace })) as {
      items: Obj[];
    };
    for (const p of list.items) await deletePing(namespace, p.metadata.name);
  });

  it('a PingSource created with a 6-field schedule fires at its moment, within 500 ms jitter', async () => {
    await createPing(namespace, 'alarm', '30 2 0 1 1 *'); // 2026-01-01T00:02:30Z
    await pings.caughtUp();
    await clock.advanceTo(START + 2 * 60_000 + 29_000);
    expect(pings.firesOf(namespace, 'alarm')).toEqual([]);
    await clock.advanceTo(START + 5 * 60_000);

    const fires = pings.firesOf(namespace, 'alarm');
    expect(fires).toHaveLength(1);
    const fire = fires[0];
    expect(iso(fire?.scheduledAt)).toBe('2026-01-01T00:02:30.000Z');
    const jitter = (fire?.firedAt ?? 0) - (fire?.scheduledAt ?? 0);
    expect(jitter).toBeGreaterThanOrEqual(0);
    expect(jitter).toBeLessThanOrEqual(500);
    expect(fire?.status).toBe(202);

    const events = sink.events();
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: PING,
      source: `/apis/v1/namespaces/${namespace}/pingsources/alarm`,
      datacontenttype: 'application/json',
      data: { alarm: 'alarm' },
      time: new Date(fire?.firedAt ?? 0).toISOString(),
    });
    expect(events[0]?.id).toMatch(UUID);
    // Pinned to one moment: the next fire is a year later.
    expect(pings.scheduled().map((s) => iso(s.next))).toEqual(['2027-01-01T00:02:30.000Z']);
  });

  it('a patched schedule refires at the new moment', async () => {
    await createPing(namespace, 'alarm', '0 1 0 1 1 *'); // 00:01:00
    await pings.caughtUp();
    await clock.advanceTo(START + 2 * 60_000);
    await patchPingSchedule(namespace, 'alarm', '0 4 0 1 1 *'); // 00:04:00
    await pings.caughtUp();
    await clock.advanceTo(START + 6 * 60_000);

    expect(pings.firesOf(namespace, 'alarm').map((f) => iso(f.scheduledAt))).toEqual([
      '2026-01-01T00:01:00.000Z',
      '2026-01-01T00:04:00.000Z',
    ]);
    expect(sink.events()).toHaveLength(2);
  });

  it('a moment that passed before the change was picked up fires only next year', async () => {
    await pings.stop();
    pings = new PingScheduler({
      clock,
      sinkUrl: sink.url,
      kubeConfig,
      namespace,
      pickupLagMs: 1000,
    });
    await pings.start();
    await clock.advanceTo(START + 500);
    await createPing(namespace, 'late', '1 0 0 1 1 *'); // 00:00:01, picked up at 00:00:01.5
    await pings.caughtUp();
    await clock.advanceTo(START + 10 * 60_000);
    expect(pings.firesOf(namespace, 'late')).toEqual([]);
    expect(pings.scheduled().map((s) => iso(s.next))).toEqual(['2027-01-01T00:00:01.000Z']);
  });

  it('a deleted PingSource stops firing', async () => {
    await createPing(namespace, 'minutely', '0 * * * * *');
    await pings.caughtUp();
    await clock.advanceTo(START + 3 * 60_000 + 30_000);
    expect(pings.firesOf(namespace, 'minutely').map((f) => iso(f.scheduledAt))).toEqual([
      '2026-01-01T00:01:00.000Z',
      '2026-01-01T00:02:00.000Z',
      '2026-01-01T00:03:00.000Z',
    ]);
    await deletePing(namespace, 'minutely');
    await pings.caughtUp();
    await clock.advanceTo(START + 10 * 60_000);
    expect(pings.firesOf(namespace, 'minutely')).toHaveLength(3);
    expect(pings.scheduled()).toEqual([]);
  });
});

// ---- the wired emulation -----------------------------------------------------------------------

describe('createKnativeEmulation: sources routed by the Triggers in knative/', () => {
  const RECOVERY_NS = 'source-watcher-recovery';
  let namespace: string;
  let clock: VirtualClock;
  let services: Record<string, EventRecorder>;
  let knative: KnativeEmulation;

  beforeEach(async () => {
    namespace = uniqueName('kn-wired');
    await ensureNamespace(namespace);
    clock = new VirtualClock({ start: START });
    services = {};
    for (const name of ['detect', 'force-drift', 'surface-stalled', 'dead-letter']) {
      services[name] = await startEventRecorder();
    }
    knative = createKnativeEmulation({
      kubeConfig,
      clock,
      subscribers: Object.fromEntries(Object.entries(services).map(([k, v]) => [k, [v.url]])),
      pingOptions: { seed: 5 },
    });
    clock.setSettle(() => knative.idle());
    await knative.start();
  });

  afterEach(async () => {
    await knative.stop();
    expect(clock.pendingTimers).toBe(0);
    for (const r of Object.values(services)) await r.close();
    await deletePing(RECOVERY_NS, 'recovery-alarm').catch((e: unknown) => {
      if ((e as { code?: number }).code !== 404) throw e;
    });
    await deleteSimAgs(namespace);
  });

  const typesAt = (service: string, ns?: string): string[] =>
    (services[service]?.events() ?? [])
      .filter((e) => ns === undefined || e.namespace === ns)
      .map((e) => `${e.type} ${String(e.name ?? e.source)}`);

  it('routes AG events, the resync sweep and the recovery alarm to the right functions', async () => {
    await createAg(namespace, 'wired');
    await knative.idle();
    expect(typesAt('detect', namespace)).toEqual([`${APISERVER_ADD} wired`]);
    expect(typesAt('surface-stalled', namespace)).toEqual([`${APISERVER_ADD} wired`]);
    expect(typesAt('force-drift')).toEqual([]);

    // The static `resync` PingSource from knative/ ticks every 5 minutes.
    await clock.advanceTo(START + 5 * 60_000 + 600);
    const resync = `${PING} /apis/v1/namespaces/${RECOVERY_NS}/pingsources/resync`;
    expect(typesAt('detect').filter((t) => t.startsWith(PING))).toEqual([resync]);
    expect(typesAt('surface-stalled').filter((t) => t.startsWith(PING))).toEqual([resync]);

    // A runtime recovery-alarm reaches detect only (one left by an earlier file's detect goes
    // first: the name is the shipped one).
    await deletePing(RECOVERY_NS, 'recovery-alarm').catch((e: unknown) => {
      if ((e as { code?: number }).code !== 404) throw e;
    });
    // As detect writes it: the detect-alarm Trigger matches its timer extension (ADR 63).
    await createPing(RECOVERY_NS, 'recovery-alarm', '0 7 0 1 1 *', {
      [TIMER_EXTENSION]: TIMER_ALARM,
    }); // 00:07:00
    await knative.idle();
    await clock.advanceTo(START + 8 * 60_000);
    const alarm = `${PING} /apis/v1/namespaces/${RECOVERY_NS}/pingsources/recovery-alarm`;
    expect(typesAt('detect').filter((t) => t.startsWith(PING))).toEqual([resync, alarm]);
    expect(typesAt('surface-stalled').filter((t) => t.startsWith(PING))).toEqual([resync]);
    expect(typesAt('dead-letter')).toEqual([]);
    expect(knative.broker.stats.delivered).toMatchObject({
      'detect-resync': 1,
      'detect-alarm': 1,
      'surface-stalled-resync': 1,
    });
  });
});
