// The Knative adapters' list-watch under the event-path storm (docs/adr/0060), against the real
// kube-apiserver through the KubeProxy, on a virtual clock: it behaves as client-go's reflector
// (the real ApiServerSource adapter's). A watch connect held on the clock is answered once the
// clock reaches its moment and loses nothing (it watches from the list's resourceVersion); after
// a mid-stream close it resumes from the last seen resourceVersion; a 410 Gone on that resume,
// or a refused watch other than 429, backs off on the clock and re-lists (a change made while it
// was down comes in the list, never as an event: the ApiServerSource sends nothing for a list);
// a 429 backs off and resumes the watch (the change comes as an event); a failed re-list backs
// off and lists again.

import { afterEach, describe, expect, it } from 'vitest';
import { ListWatch, type KubeObject } from '../harness/knative/list-watch.js';
import { AG_RESOURCE } from '../harness/knative/index.js';
import { VirtualClock } from '../harness/virtual-clock.js';
import {
  createArtifactGenerator,
  ensureNamespace,
  makeArtifactGenerator,
  MERGE_PATCH,
  testKubeConfig,
  uniqueName,
  customObjects,
} from '../support/apiserver.js';
import { startKubeProxy, type FaultRule, type KubeProxy } from '../support/kube-proxy.js';
import { REFLECTOR_BACKOFF } from '../harness/knative/list-watch.js';
import { StormProfile, type StormClientProfile } from '../support/storm.js';

const T0 = Date.parse('2026-12-01T10:00:00Z');
const TAG = 'lw';
const kubeConfig = testKubeConfig();

let proxy: KubeProxy | undefined;
let watch: ListWatch | undefined;
afterEach(async () => {
  await watch?.stop();
  await proxy?.stop();
  watch = undefined;
  proxy = undefined;
});

const until = async (what: string, ok: () => boolean, ms = 10_000): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

interface World {
  proxy: KubeProxy;
  clock: VirtualClock;
  watch: ListWatch;
  namespace: string;
  events: { type: string; name: string; at: number }[];
  lists: string[][];
  storm(profile: Partial<StormClientProfile>): void;
  /** The adapter's calls: "verb" or "verb status" (a storm answer, a fault), in order. */
  calls(): string[];
}

async function world(): Promise<World> {
  const clock = new VirtualClock({ start: T0 });
  const p = await startKubeProxy(kubeConfig, { tag: 'untagged', clock });
  proxy = p;
  const namespace = uniqueName('lw');
  await ensureNamespace(namespace, kubeConfig);
  const events: World['events'] = [];
  const lists: string[][] = [];
  const name = (o: KubeObject): string => o.metadata?.name ?? '';
  const w = new ListWatch(
    p.kubeConfig(TAG),
    { ...AG_RESOURCE, namespace },
    {
      onEvent: (type, obj) => events.push({ type, name: name(obj), at: clock.now() }),
      onList: (items) => lists.push(items.map(name).sort()),
    },
    { clock, seed: 3 },
  );
  watch = w;
  return {
    proxy: p,
    clock,
    watch: w,
    namespace,
    events,
    lists,
    storm(profile) {
      const storm = new StormProfile({
        seed: 5,
        startMs: T0,
        durationMs: 3600_000,
        profiles: { [TAG]: profile },
      });
      p.setStorm(storm, { holdOn: clock });
    },
    calls: () =>
      p
        .callsMatching({ clientTag: TAG })
        .map((c) =>
          c.storm !== undefined || c.fault !== undefined
            ? `${c.verb} ${c.storm ?? c.status}`
            : c.verb,
        ),
  };
}

const createAg = (namespace: string, name: string) =>
  createArtifactGenerator(makeArtifactGenerator({ namespace, name }), kubeConfig);
const labelAg = (namespace: string, name: string) =>
  customObjects(kubeConfig).patchNamespacedCustomObject(
    {
      group: AG_RESOURCE.group,
      version: AG_RESOURCE.version,
      plural: AG_RESOURCE.plural,
      namespace,
      name,
      body: { metadata: { labels: { touched: 'yes' } } },
    },
    MERGE_PATCH,
  );

describe('list-watch under the event-path storm (real kube-apiserver)', () => {
  it('a watch connect held on the clock is answered at its moment and loses nothing', async () => {
    const w = await world();
    w.storm({ watchHeld: 1, watchHeldMinMs: 3000, watchHeldMaxMs: 3000 });
    const started = w.watch.start();
    await until('the connect held', () => w.proxy.heldOnClock === 1);
    expect(w.watch.phase).toBe('connecting');
    // Created after the list, while the connect waits: the watch must still deliver it.
    await createAg(w.namespace, 'held-1');
    await new Promise((r) => setTimeout(r, 200));
    expect(w.events).toEqual([]);
    await w.clock.advance(2999);
    expect(w.proxy.heldOnClock).toBe(1);
    await w.clock.advance(1);
    await started;
    await until('the event', () => w.events.length === 1);
    expect(w.events).toEqual([{ type: 'ADDED', name: 'held-1', at: T0 + 3000 }]);
    expect(w.calls()).toEqual(['list', 'watch watchHeld']);
    expect(w.watch.relists).toBe(0);
  });

  it('a watch open before the storm starts is closed by it too, and resumes', async () => {
    const w = await world();
    await w.watch.start();
    w.storm({ watchClosesPerMinute: 60_000 });
    await w.clock.advance(1000);
    await until('the resume', () => w.calls().length === 3 && w.watch.phase === 'streaming');
    w.storm({});
    // The first watch met no storm; the storm closed it; the resume was given a lifetime too.
    expect(w.calls()).toEqual(['list', 'watch', 'watch watchClosed']);
    await createAg(w.namespace, 'after-resume');
    await until('the event', () => w.events.length === 1);
    expect(w.watch.relists).toBe(0);
    expect(w.watch.backoffs).toBe(0);
  });

  const rows: {
    what: string;
    /** Besides the mid-stream close of the first watch. */
    storm: Partial<StormClientProfile>;
    fault?: FaultRule;
    calls: string[];
    relists: number;
    backoffs: number;
    /** The AG created while the watch was down: in the re-list, or as an event of the resume. */
    downtimeChange: 'listed' | 'event';
  }[] = [
    {
      what: 'a 410 Gone on the resume re-lists',
      storm: { watchGoneOnResume: 1 },
      calls: ['list', 'watch watchClosed', 'watch watchGone', 'list', 'watch'],
      relists: 1,
      backoffs: 1,
      downtimeChange: 'listed',
    },
    {
      what: 'a 500 on the resume re-lists',
      storm: {},
      fault: { kind: 'status', status: 500, match: { clientTag: TAG, verb: 'watch' }, times: 1 },
      calls: ['list', 'watch watchClosed', 'watch 500', 'list', 'watch'],
      relists: 1,
      backoffs: 1,
      downtimeChange: 'listed',
    },
    {
      what: 'a 429 on the resume resumes the watch after the backoff',
      storm: {},
      fault: { kind: 'status', status: 429, match: { clientTag: TAG, verb: 'watch' }, times: 1 },
      calls: ['list', 'watch watchClosed', 'watch 429', 'watch'],
      relists: 0,
      backoffs: 1,
      downtimeChange: 'event',
    },
    {
      what: 'a 410, then a 429 on the re-list, lists again after a longer backoff',
      storm: { watchGoneOnResume: 1 },
      fault: { kind: 'status', status: 429, match: { clientTag: TAG, verb: 'list' }, times: 1 },
      calls: ['list', 'watch watchClosed', 'watch watchGone', 'list 429', 'list', 'watch'],
      relists: 2,
      backoffs: 2,
      downtimeChange: 'listed',
    },
  ];
  it.each(rows)('after a mid-stream close, $what', async (row) => {
    const w = await world();
    await createAg(w.namespace, 'before');
    // One close of the first watch, a second after it opened (the rate makes it near certain).
    w.storm({ watchClosesPerMinute: 60_000, ...row.storm });
    await w.watch.start();
    expect(w.lists).toEqual([['before']]);
    await createAg(w.namespace, 'streamed');
    await until('the streamed event', () => w.events.length === 1);
    // The fault for the resume (explicit rules win over the storm), armed only now: the adapter's
    // list at the start must not meet it.
    if (row.fault !== undefined) w.proxy.addFault(row.fault);
    const closedAt = T0 + 1000;
    await w.clock.advance(1000);
    await until('the backoff', () => w.watch.phase === 'backoff');
    // No more closes from here on; the backoff is on the clock, so time must move.
    w.storm({});
    await createAg(w.namespace, 'while-down');
    await new Promise((r) => setTimeout(r, 100));
    expect(w.watch.phase).toBe('backoff');
    const maxWaitMs = REFLECTOR_BACKOFF.initialMs * 2 * (1 + REFLECTOR_BACKOFF.jitter);
    for (let i = 0; i < row.backoffs; i++) {
      await w.clock.advance(maxWaitMs);
      if (i < row.backoffs - 1)
        await until('the second backoff', () => w.watch.phase === 'backoff');
    }
    await until(
      'streaming again',
      () => w.watch.phase === 'streaming' && w.calls().length === row.calls.length,
    );
    expect(w.calls()).toEqual(row.calls);
    expect(w.watch.relists).toBe(row.relists);
    expect(w.watch.backoffs).toBe(row.backoffs);
    // The recovery waited for the clock: at least one initial backoff after the close.
    const recovered = w.proxy.callsMatching({ clientTag: TAG }).at(-1);
    expect(recovered?.at).toBeGreaterThanOrEqual(closedAt + REFLECTOR_BACKOFF.initialMs);
    await labelAg(w.namespace, 'while-down');
    await until('the label event', () => w.events.some((e) => e.type === 'MODIFIED'));
    const names = w.events.map((e) => `${e.type} ${e.name}`);
    if (row.downtimeChange === 'listed') {
      expect(w.lists.at(-1)).toEqual(['before', 'streamed', 'while-down']);
      expect(names).toEqual(['ADDED streamed', 'MODIFIED while-down']);
    } else {
      expect(w.lists).toEqual([['before']]);
      expect(names).toEqual(['ADDED streamed', 'ADDED while-down', 'MODIFIED while-down']);
    }
  });
});
