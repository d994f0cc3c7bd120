// Parity with the reference driver (issue 12, items 1-3), over real HTTP against the real test
// API server: a PackageSource being deleted is left alone and its AG is not forced; an AG with no
// Ready projects Unknown/ArtifactGeneratorNotReady; a requestedAt bumped by someone else during a
// wait window is not resumed as if it were an interrupted force of ours.

import { afterAll, describe, expect, it } from 'vitest';
import {
  ACTION_FORCE,
  ANNOTATION_ATTEMPTS,
  ANNOTATION_REQUESTED_AT,
  REASON_FORCED,
  findCondition,
  formatTimeNano,
  readyOf,
} from '../../../shared/core/index.js';
import type {
  ArtifactGenerator,
  ArtifactGeneratorStatus,
  PackageSource,
} from '../../../shared/core/objects/types.js';
import {
  agRefOf,
  createPackageSource,
  customObjects,
  getArtifactGenerator,
  getPackageSource,
  makePackageSource,
  MERGE_PATCH,
  uniqueName,
} from '../../support/apiserver.js';
import { createAgWithStatus, stuckStatus } from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import { actionEvent, agResourceEvent, postEvent } from '../../support/http-events.js';
import { functionFile, trackingAnnotations } from './suite-kit.js';
import { resyncPing } from '../../support/http-events.js';
import { marker, progressing } from '../../support/conditions.js';

const { T0, kc, suite } = functionFile('parity');
const HOLD = 'test.cozystack.io/hold';
const psApi = { group: 'cozystack.io', version: 'v1alpha1', plural: 'packagesources' } as const;
const held: string[] = [];
const starters = {
  'force-drift': suite.startForceDrift,
  'surface-stalled': suite.startSurfaceStalled,
  detect: suite.startDetect,
} as const;
const start = (which: keyof typeof starters, clock: SettableClock) => starters[which](clock);

afterAll(async () => {
  // Let the held PackageSources go.
  for (const name of held) {
    await customObjects(kc)
      .patchClusterCustomObject(
        { ...psApi, name, body: { metadata: { finalizers: null } } },
        MERGE_PATCH,
      )
      .catch(() => undefined);
  }
});

/** A PackageSource and an AG it controls; `deleting` deletes the PackageSource under a finalizer. */
async function ownedPair(
  status: ArtifactGeneratorStatus,
  o: { deleting?: boolean; annotations?: Record<string, string> } = {},
): Promise<{ name: string; ag: ArtifactGenerator; ps: PackageSource }> {
  const name = uniqueName('parity');
  const body = makePackageSource({ name });
  if (o.deleting) body.metadata = { ...body.metadata, finalizers: [HOLD] };
  const created = await createPackageSource(body, kc);
  const ag = await createAgWithStatus(kc, status, {
    name,
    owner: { name, uid: created.metadata?.uid ?? '' },
    ...(o.annotations ? { annotations: o.annotations } : {}),
  });
  if (o.deleting) {
    held.push(name);
    await customObjects(kc).deleteClusterCustomObject({ ...psApi, name });
  }
  const ps = await getPackageSource(name, kc);
  if (o.deleting) expect(ps.metadata?.deletionTimestamp).toBeTruthy();
  return { name, ag, ps };
}

const forceEvent = (ag: ArtifactGenerator, attempts = 0) =>
  actionEvent(ACTION_FORCE, ag, attempts, T0);

const agEvent = (ag: ArtifactGenerator) => agResourceEvent(ag);

describe('item 1: a PackageSource being deleted', () => {
  it('its AG is not forced: force-drift writes nothing', async () => {
    const fd = await start('force-drift', new SettableClock(T0 + 31_000));
    const { ag } = await ownedPair(stuckStatus(T0), { deleting: true });
    expect(await postEvent(fd.url, forceEvent(ag))).toMatchObject({
      status: 200,
      body: { result: 'owner-deleting' },
    });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.resourceVersion).toBe(ag.metadata?.resourceVersion);
    expect(after.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBeUndefined();
    expect(readyOf(after)?.reason).not.toBe(REASON_FORCED);
  });

  it('an interrupted force of ours is not finished either', async () => {
    const claim = T0 - 20_000;
    const fd = await start('force-drift', new SettableClock(T0));
    const { ag } = await ownedPair(
      { ...stuckStatus(T0 - 120_000), conditions: [marker(claim)] },
      {
        deleting: true,
        annotations: trackingAnnotations(1, claim, false),
      },
    );
    expect((await postEvent(fd.url, forceEvent(ag, 1))).body).toEqual({
      result: 'owner-deleting',
    });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.resourceVersion).toBe(ag.metadata?.resourceVersion);
    expect(after.metadata?.annotations?.[ANNOTATION_REQUESTED_AT]).toBeUndefined();
  });

  it('the same AG is forced while its PackageSource is not being deleted (control)', async () => {
    const fd = await start('force-drift', new SettableClock(T0 + 31_000));
    const { ag } = await ownedPair(stuckStatus(T0));
    expect((await postEvent(fd.url, forceEvent(ag))).body).toEqual({ result: 'forced' });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBe('1');
  });

  it('surface-stalled writes nothing to it, on an AG event or a resync', async () => {
    const s = await start('surface-stalled', new SettableClock(T0 + 31_000));
    const { name, ag, ps } = await ownedPair(stuckStatus(T0), { deleting: true });
    expect(await postEvent(s.url, agEvent(ag))).toMatchObject({
      status: 200,
      body: { result: 'left-alone' },
    });
    expect((await postEvent(s.url, resyncPing())).status).toBe(200);
    const after = await getPackageSource(name, kc);
    expect(after.metadata?.resourceVersion).toBe(ps.metadata?.resourceVersion);
    expect(findCondition(after.status?.conditions, 'Ready')).toBeUndefined();
  });
});

describe('item 2: an AG with no Ready condition', () => {
  it('projects PackageSource Ready Unknown/ArtifactGeneratorNotReady', async () => {
    const s = await start('surface-stalled', new SettableClock(T0 + 5_000));
    const { name, ag } = await ownedPair({});
    expect(readyOf(ag)).toBeUndefined();
    expect((await postEvent(s.url, agEvent(ag))).body).toEqual({ result: 'updated' });
    const ps = await getPackageSource(name, kc);
    expect(findCondition(ps.status?.conditions, 'Ready')).toMatchObject({
      status: 'Unknown',
      reason: 'ArtifactGeneratorNotReady',
      observedGeneration: ps.metadata?.generation,
    });
  });
});

describe('item 3: a requestedAt bumped by someone else during a wait window', () => {
  const claim = T0 - 30_000;
  const now = T0; // 30 s after the claim of attempt 2: inside its 60 s window, past the settle time
  const claimed = (requestedAt: number, readyNow = marker(claim)) =>
    ownedPair(
      { ...stuckStatus(T0 - 300_000), conditions: [readyNow] },
      {
        annotations: {
          ...trackingAnnotations(2, claim, false),
          [ANNOTATION_REQUESTED_AT]: new Date(requestedAt).toISOString(),
        },
      },
    );

  it.each([
    ['our marker still in place', undefined],
    ['source-watcher already Progressing', progressing(claim + 6_000)],
  ])('is not resumed (%s): force-drift writes nothing', async (_label, readyNow) => {
    const fd = await start('force-drift', new SettableClock(now));
    const { ag } = await claimed(claim + 5_000, readyNow);
    expect((await postEvent(fd.url, forceEvent(ag, 2))).body).toEqual({ result: 'waiting' });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.resourceVersion).toBe(ag.metadata?.resourceVersion);
    expect(after.metadata?.annotations?.[ANNOTATION_REQUESTED_AT]).toBe(
      new Date(claim + 5_000).toISOString(),
    );
    expect(readyOf(after)).toEqual(readyOf(ag));
  });

  it('detect emits no force for it', async () => {
    suite.sink.events.length = 0;
    const d = await start('detect', new SettableClock(now));
    const { ag } = await claimed(claim + 5_000);
    expect((await postEvent(d.url, agEvent(ag))).status).toBe(200);
    expect(suite.sink.events.filter((e) => e.type === ACTION_FORCE)).toEqual([]);
  });

  it('an older requestedAt is still our unfinished force, and is resumed (control)', async () => {
    const fd = await start('force-drift', new SettableClock(now));
    const { ag } = await claimed(claim - 120_000);
    expect((await postEvent(fd.url, forceEvent(ag, 2))).body).toEqual({ result: 'resumed' });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.annotations?.[ANNOTATION_REQUESTED_AT]).toBe(formatTimeNano(claim));
    expect(after.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBe('2');
  });
});
