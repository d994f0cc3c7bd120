// The source-watcher simulator against the real test API server, on a virtual clock: the happy
// path, the fluxcd/pkg#934 stuck state and why it never heals by itself, what does and does not
// enqueue an AG, and the failure reasons.

import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AG_RESOURCE as AG } from '../harness/knative/index.js';
import type { VirtualClock } from '../harness/virtual-clock.js';
import type { SimAg, SimCondition, SourceWatcherSim } from '../harness/source-watcher-sim/index.js';
import { MERGE_PATCH as mergePatch, testKubeConfig, uniqueName } from '../support/apiserver.js';
import { marker, succeeded } from '../support/conditions.js';
import { createSimAg, deleteSimAgs, simArtifacts, startSimWorld } from './sim-world.js';

const FINALIZER = 'source.extensions.fluxcd.io/finalizer';
const REQUESTED_AT = 'reconcile.fluxcd.io/requestedAt';
const BUILD_MS = 2_000;
const HOUR = 60 * 60 * 1000;
/** Long enough for: finalizer (requeued after 1 ms), build, 750 ms rate-limited error retries. */
const SETTLE_WINDOW_MS = 10_000;

const raw = testKubeConfig().makeApiClient(CustomObjectsApi);

interface Ref {
  namespace: string;
  name: string;
}

let namespace: string;
let clock: VirtualClock;
let sim: SourceWatcherSim;

beforeEach(async () => {
  ({ namespace, clock, sim } = await startSimWorld('sws', { buildTimeMs: BUILD_MS, seed: 7 }));
});

afterEach(async () => {
  await sim.stop();
  // stop() leaves no virtual timer behind.
  expect(clock.pendingTimers).toBe(0);
  await deleteSimAgs(namespace);
});

/** A new AG, `before` (a fault knob) set on its ref before source-watcher sees it. */
async function createAg(
  artifacts = ['alpha', 'beta'],
  before?: (ref: Ref) => void,
): Promise<Ref & { rv: string }> {
  const ref = { namespace, name: uniqueName('ag') };
  before?.(ref);
  const created = await createSimAg(namespace, ref.name, artifacts);
  return { ...ref, rv: created.metadata.resourceVersion ?? '' };
}

async function readAg(ref: Ref): Promise<SimAg> {
  return (await raw.getNamespacedCustomObject({ ...AG, ...ref })) as SimAg;
}

async function patchMain(ref: Ref, body: object): Promise<string> {
  const res = (await raw.patchNamespacedCustomObject({ ...AG, ...ref, body }, mergePatch)) as SimAg;
  return res.metadata.resourceVersion ?? '';
}

async function patchStatus(ref: Ref, body: object): Promise<string> {
  const res = (await raw.patchNamespacedCustomObjectStatus(
    { ...AG, ...ref, body },
    mergePatch,
  )) as SimAg;
  return res.metadata.resourceVersion ?? '';
}

/** Set one condition, keeping the others (merge patch replaces the list). */
async function writeCondition(ref: Ref, condition: SimCondition): Promise<string> {
  const current = await readAg(ref);
  const others = (current.status?.conditions ?? []).filter((c) => c.type !== condition.type);
  return patchStatus(ref, {
    metadata: { resourceVersion: current.metadata.resourceVersion },
    status: { conditions: [...others, condition] },
  });
}

/**
 * Wait until the simulator saw the write, then let virtual time run (settling after every step);
 * at the end every reconcile is done or waiting on the virtual clock.
 */
async function afterWrite(rv: string, windowMs = SETTLE_WINDOW_MS): Promise<void> {
  await sim.observed(rv);
  await clock.advance(windowMs);
  await sim.settled();
}

function cond(ag: SimAg, type: string): SimCondition | undefined {
  return ag.status?.conditions?.find((c) => c.type === type);
}

function outcomes(ref: Ref): string[] {
  return sim.reconcilesOf(ref).map((r) => r.outcome);
}

async function healthyAg(artifacts?: string[]): Promise<Ref> {
  const ref = await createAg(artifacts);
  await afterWrite(ref.rv);
  expect(cond(await readAg(ref), 'Ready')?.status).toBe('True');
  return ref;
}

describe('source-watcher simulator: a new ArtifactGenerator', () => {
  it('gets the finalizer, is built, and ends Ready=True with inventory and digest', async () => {
    const ref = await createAg(['alpha', 'beta']);
    await afterWrite(ref.rv);

    const ag = await readAg(ref);
    expect(ag.metadata.finalizers).toContain(FINALIZER);
    expect(ag.status?.inventory).toEqual([
      {
        name: 'alpha',
        namespace,
        digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
        filename: 'alpha.tar.gz',
      },
      {
        name: 'beta',
        namespace,
        digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
        filename: 'beta.tar.gz',
      },
    ]);
    expect(ag.status?.observedSourcesDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    // Finalizer step at 0, requeued after 1 ms, build 2 s: Ready turned True at 00:00:02.001.
    expect(cond(ag, 'Ready')).toEqual(succeeded(Date.UTC(2026, 0, 1, 0, 0, 2), 1, 2));
    expect(cond(ag, 'Reconciling')).toBeUndefined();
    expect(outcomes(ref)).toEqual(['FinalizerAdded', 'Built']);
    expect(sim.reconcilesOf(ref)[1]?.drift).toBe('SourcesDigestChanged');
  });
});

describe('source-watcher simulator: the lost conditions write (fluxcd/pkg#934)', () => {
  it.each([
    { name: 'per-AG loss', inject: (s: SourceWatcherSim, ref: Ref) => s.loseConditionsWrite(ref) },
    {
      name: 'loss probability 1',
      inject: (s: SourceWatcherSim) => s.setConditionsLossProbability(1),
    },
  ])('$name leaves inventory + digest with Ready Unknown/Progressing', async ({ inject }) => {
    const ref = await createAg(['alpha'], (r) => inject(sim, r));
    await afterWrite(ref.rv);

    const ag = await readAg(ref);
    expect(ag.status?.inventory).toHaveLength(1);
    expect(ag.status?.observedSourcesDigest).toMatch(/^sha256:/);
    expect(cond(ag, 'Ready')).toMatchObject({
      status: 'Unknown',
      reason: 'Progressing',
      message: 'Reconciliation in progress',
      observedGeneration: ag.metadata.generation,
    });
    expect(cond(ag, 'Reconciling')?.status).toBe('True');
    expect(sim.stats.lostWrites).toBe(1);
    // The lost write is an error: a rate-limited retry finds no drift.
    expect(outcomes(ref)).toEqual(['FinalizerAdded', 'Built', 'NoDrift']);
  });

  it('is never healed by source-watcher alone; Ready=False + requestedAt is what makes it rebuild', async () => {
    const ref = await createAg(['alpha', 'beta'], (r) => sim.loseConditionsWrite(r));
    await afterWrite(ref.rv);
    const stuckReady = cond(await readAg(ref), 'Ready');
    expect(stuckReady?.status).toBe('Unknown');
    const reconciles = (): number => sim.reconcilesOf(ref).length;
    let before = reconciles();

    // A status-only write (someone else's condition) does not enqueue.
    await afterWrite(
      await writeCondition(ref, {
        type: 'Foo',
        status: 'True',
        reason: 'Other',
        message: 'written by someone else',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      }),
    );
    expect(reconciles()).toBe(before);

    // Another annotation does not enqueue.
    await afterWrite(
      await patchMain(ref, { metadata: { annotations: { 'example.com/note': 'x' } } }),
    );
    expect(reconciles()).toBe(before);
    expect(cond(await readAg(ref), 'Ready')).toEqual(stuckReady);

    // The hourly requeue runs, finds no drift, touches no condition.
    await clock.advance(HOUR);
    await sim.idle();
    expect(outcomes(ref).slice(before)).toEqual(['NoDrift']);
    expect(cond(await readAg(ref), 'Ready')).toEqual(stuckReady);
    before = reconciles();

    // requestedAt alone with Ready Unknown: reconciled, no drift, no rebuild.
    await afterWrite(
      await patchMain(ref, { metadata: { annotations: { [REQUESTED_AT]: 'first' } } }),
    );
    expect(outcomes(ref).slice(before)).toEqual(['NoDrift']);
    let ag = await readAg(ref);
    expect(ag.status?.lastHandledReconcileAt).toBe('first');
    expect(cond(ag, 'Ready')).toEqual(stuckReady);
    before = reconciles();

    // Ready=False on the status subresource alone does not enqueue either.
    sim.keepConditionsWrite(ref);
    await afterWrite(
      await writeCondition(ref, marker(Date.UTC(2026, 0, 1, 1), ag.metadata.generation ?? 0)),
    );
    expect(reconciles()).toBe(before);
    expect(cond(await readAg(ref), 'Ready')?.reason).toBe('SourceWatcherRecoveryForced');

    // Both signals: Ready=False and a new requestedAt -> drift -> rebuild -> honest Ready=True.
    await afterWrite(
      await patchMain(ref, { metadata: { annotations: { [REQUESTED_AT]: 'second' } } }),
    );
    const last = sim.reconcilesOf(ref).slice(before);
    expect(last.map((r) => [r.outcome, r.drift])).toEqual([['Built', 'ReadyFalse']]);
    ag = await readAg(ref);
    expect(cond(ag, 'Ready')).toMatchObject({
      status: 'True',
      reason: 'Succeeded',
      message: 'reconciliation succeeded, generated 2 artifact(s)',
    });
    expect(ag.status?.lastHandledReconcileAt).toBe('second');
    expect(cond(ag, 'Reconciling')).toBeUndefined();
    // The patch helper applied only its own changes: the foreign condition survived.
    expect(cond(ag, 'Foo')?.message).toBe('written by someone else');
  });
});

describe('source-watcher simulator: what enqueues a healthy AG', () => {
  it.each([
    {
      name: 'a status-only write',
      write: (ref: Ref) =>
        writeCondition(ref, {
          type: 'Foo',
          status: 'False',
          reason: 'Other',
          message: 'm',
          lastTransitionTime: '2026-01-01T00:00:05Z',
        }),
      want: [] as string[],
    },
    {
      name: 'Ready=False on the status subresource',
      write: async (ref: Ref) =>
        writeCondition(
          ref,
          marker(Date.UTC(2026, 0, 1, 0, 0, 5), (await readAg(ref)).metadata.generation ?? 0),
        ),
      want: [],
    },
    {
      name: 'another annotation',
      write: (ref: Ref) => patchMain(ref, { metadata: { annotations: { 'example.com/x': 'y' } } }),
      want: [],
    },
    {
      name: 'a label',
      write: (ref: Ref) => patchMain(ref, { metadata: { labels: { team: 'a' } } }),
      want: [],
    },
    {
      name: 'requestedAt appearing (no drift: nothing rebuilt)',
      write: (ref: Ref) => patchMain(ref, { metadata: { annotations: { [REQUESTED_AT]: 'now' } } }),
      want: ['NoDrift'],
    },
    {
      name: 'a spec change (generation bump)',
      write: (ref: Ref) =>
        patchMain(ref, { spec: { artifacts: simArtifacts(['alpha', 'beta', 'gamma']) } }),
      want: ['Built'],
    },
  ])('$name -> $want', async ({ write, want }) => {
    const ref = await healthyAg();
    const before = sim.reconcilesOf(ref).length;
    await afterWrite(await write(ref));
    expect(outcomes(ref).slice(before)).toEqual(want);
  });

  it('a spec change rebuilds for the new generation', async () => {
    const ref = await healthyAg(['alpha']);
    const rv = await patchMain(ref, {
      spec: { artifacts: simArtifacts(['alpha', 'beta', 'gamma']) },
    });
    await afterWrite(rv);
    const ag = await readAg(ref);
    expect(ag.metadata.generation).toBe(2);
    expect(cond(ag, 'Ready')).toMatchObject({ status: 'True', observedGeneration: 2 });
    expect(ag.status?.inventory?.map((e) => e.name)).toEqual(['alpha', 'beta', 'gamma']);
    expect(sim.reconcilesOf(ref).at(-1)?.drift).toBe('GenerationChanged');
  });

  it('a new source revision (source watch) rebuilds with a new digest', async () => {
    const ref = await healthyAg();
    const oldDigest = (await readAg(ref)).status?.observedSourcesDigest;
    sim.setSourceRevision(ref, 'v2');
    await clock.advance(SETTLE_WINDOW_MS);
    await sim.idle();
    const ag = await readAg(ref);
    expect(ag.status?.observedSourcesDigest).toMatch(/^sha256:/);
    expect(ag.status?.observedSourcesDigest).not.toBe(oldDigest);
    expect(sim.reconcilesOf(ref).at(-1)).toMatchObject({
      outcome: 'Built',
      drift: 'SourcesDigestChanged',
    });
  });
});

describe('source-watcher simulator: failures', () => {
  it.each([
    {
      name: 'build failure',
      knob: (s: SourceWatcherSim, ref: Ref) => s.setBuildFailure(ref, true),
      reason: 'BuildFailed',
      message: 'build failed: simulated build failure',
      // Finalizer 0 s, build 0.001-2.001 s fails; its rate-limited retry starts at 2.751 s.
      windowMs: 2_500,
    },
    {
      name: 'missing source',
      knob: (s: SourceWatcherSim, ref: Ref) => s.setSourceMissing(ref, true),
      reason: 'SourceFetchFailed',
      message: `get sources failed: GitRepository '<ns>/repo' not found`,
      // Finalizer 0 s, fetch fails at 0.001 s; next try at 5.001 s.
      windowMs: 3_000,
    },
  ])('$name -> Ready=False $reason', async ({ knob, reason, message, windowMs }) => {
    const ref = await createAg(['alpha'], (r) => knob(sim, r));
    await afterWrite(ref.rv, windowMs);
    await sim.idle();
    const ag = await readAg(ref);
    expect(cond(ag, 'Ready')).toMatchObject({
      status: 'False',
      reason,
      message: message.replace('<ns>', namespace),
      observedGeneration: 1,
    });
    expect(ag.status?.inventory).toBeUndefined();
  });

  it('a missing source is retried every 5 s and recovers when the source appears', async () => {
    const ref = await createAg(['alpha'], (r) => sim.setSourceMissing(r, true));
    // 0 s finalizer, 0.001 s and 5.001 s source fetch failures.
    await afterWrite(ref.rv, 6_000);
    expect(outcomes(ref)).toEqual(['FinalizerAdded', 'SourceFetchFailed', 'SourceFetchFailed']);
    sim.setSourceMissing(ref, false);
    await clock.advance(SETTLE_WINDOW_MS);
    await sim.idle();
    expect(cond(await readAg(ref), 'Ready')?.status).toBe('True');
    // The rebuild, then the already-armed 5 s retry (client-go keeps the earliest time) finds no drift.
    expect(
      sim
        .reconcilesOf(ref)
        .slice(3)
        .map((r) => [r.outcome, r.drift]),
    ).toEqual([
      ['Built', 'ReadyFalse'],
      ['NoDrift', undefined],
    ]);
  });

  it('a dead source-watcher ignores events; reviving it reconciles every AG', async () => {
    const ref = await healthyAg();
    const before = sim.reconcilesOf(ref).length;
    sim.setDead(true);
    await afterWrite(
      await patchMain(ref, { metadata: { annotations: { [REQUESTED_AT]: 'dead' } } }),
    );
    expect(sim.reconcilesOf(ref).length).toBe(before);
    expect((await readAg(ref)).status?.lastHandledReconcileAt).toBeUndefined();
    sim.setDead(false);
    await clock.advance(0);
    await sim.idle();
    expect(outcomes(ref).slice(before)).toEqual(['NoDrift']);
    expect((await readAg(ref)).status?.lastHandledReconcileAt).toBe('dead');
  });
});
