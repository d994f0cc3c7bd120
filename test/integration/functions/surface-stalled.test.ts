// surface-stalled over real HTTP against the real test API server: the only writer of
// PackageSource Ready.
// - The PackageSource Ready contract; an AG with no Ready projects Unknown/ArtifactGeneratorNotReady
//   (parity with the reference driver).
// - An AG event (docs/adr/0044-recovery-under-load.md): answered from the PackageSource alone when
//   it is in step with the event's AG; otherwise the AG is read once when the cache is at least as
//   new as the event, and fresh only when the cache is older; a forged event never causes a write.
// - One sync per AG at a time (docs/adr/0050-one-sync-per-ag-at-a-time.md), through the
//   fault-injecting proxy. A call held by the proxy keeps the first delivery's sync running while a
//   second delivery about the same AG arrives: the second answers "covered" with no call of its
//   own when the first read its AG version; a newer version waits its turn (no call while the
//   first runs) and then syncs; a first sync that fails, or that decided on the event's AG alone,
//   covers nobody.

import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ACTION_STALLED,
  APISERVER_UPDATE,
  REASON_AWAITING,
  REASON_FORCED,
  REASON_STALLED,
  findCondition,
  formatTimeSeconds,
  readyOf,
} from '../../../shared/core/index.js';
import type {
  ArtifactGenerator,
  ArtifactGeneratorStatus,
  Condition,
  PackageSource,
} from '../../../shared/core/objects/types.js';
import {
  agRefOf,
  cachedArtifactGeneratorRv,
  cachedPackageSourceRv,
  createOwnedPair,
  createPackageSource,
  getPackageSource,
  makePackageSource,
  uniqueName,
  writeArtifactGeneratorStatus,
  writePackageSourceStatus,
} from '../../support/apiserver.js';
import { createAgWithStatus, healthyStatus, stuckStatus } from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import {
  actionEvent,
  agResourceEvent as agEvent,
  cloudEvent,
  postEvent,
  resyncPing,
  type Answer,
} from '../../support/http-events.js';
import type { CallMatch, FaultRule } from '../../support/kube-proxy.js';
import { functionFile, ownedPairWith, trackingAnnotations } from './suite-kit.js';
import { buildFailed, marker, readyWith, succeeded } from '../../support/conditions.js';

const { T0, kc, suite } = functionFile('surface-stalled');
const startSurface = suite.startSurfaceStalled;

afterEach(() => suite.proxy.clearFaults());

/** A PackageSource (with an unrelated condition that must survive) and an AG it owns. */
async function ownedPair(
  status: ArtifactGeneratorStatus,
  annotations: Record<string, string> = {},
) {
  const name = uniqueName('pks');
  const ps = await createPackageSource(makePackageSource({ name }), kc);
  const other: Condition = {
    type: 'VariantsResolved',
    status: 'True',
    reason: 'Resolved',
    message: 'ok',
    lastTransitionTime: formatTimeSeconds(T0),
  };
  await writePackageSourceStatus(name, { conditions: [other] }, kc);
  const ag = await createAgWithStatus(kc, status, {
    name,
    owner: { name, uid: ps.metadata?.uid ?? '' },
    annotations,
  });
  return { name, ag, other };
}

/**
 * surface-stalled a minute after T0 and a healthy pair, its calls to the PackageSource (the
 * `verb` ones, if given) answered `status` (`times` times, if given).
 */
async function healthyPairBehindFault(fault: { status: number; verb?: 'patch'; times?: number }) {
  const s = await startSurface(new SettableClock(T0 + 60_000));
  const { name, ag } = await ownedPair(healthyStatus(T0));
  const { status, verb, times } = fault;
  suite.proxy.addFault({
    match: {
      clientTag: 'surface-stalled',
      resource: 'packagesources',
      name,
      ...(verb && { verb }),
    },
    kind: 'status',
    status,
    ...(times !== undefined && { times }),
  });
  return { s, name, ag };
}

const readyOfPs = (ps: PackageSource): Condition | undefined =>
  findCondition(ps.status?.conditions, 'Ready');

describe('surface-stalled: the PackageSource Ready contract', () => {
  it('copies an honest Ready=True through, keeps other conditions, and uses the PackageSource generation', async () => {
    const s = await startSurface(new SettableClock(T0 + 60_000));
    const { name, ag, other } = await ownedPair(healthyStatus(T0));
    expect(await postEvent(s.url, agEvent(ag))).toMatchObject({
      status: 200,
      body: { result: 'updated' },
    });
    const ps = await getPackageSource(name, kc);
    expect(readyOfPs(ps)).toEqual({
      ...succeeded(T0),
      observedGeneration: ps.metadata?.generation,
    });
    expect(findCondition(ps.status?.conditions, 'VariantsResolved')).toEqual(other);
  });

  it('an in-step PackageSource costs one cached read (the PackageSource) and no write', async () => {
    const s = await startSurface(new SettableClock(T0 + 60_000));
    const { ag } = await ownedPair(healthyStatus(T0));
    await postEvent(s.url, agEvent(ag));
    suite.proxy.clearCalls();
    expect((await postEvent(s.url, agEvent(ag))).body).toEqual({ result: 'in-step' });
    const calls = suite.proxy.callsMatching({ clientTag: 'surface-stalled' });
    expect(calls.map((c) => `${c.verb} ${c.resource}`)).toEqual(['get packagesources']);
    expect(calls.every((c) => c.path.includes('resourceVersion=0'))).toBe(true);
  });

  it('passes a genuine upstream failure through unchanged', async () => {
    const s = await startSurface(new SettableClock(T0 + 60_000));
    const failed = { ...healthyStatus(T0), conditions: [buildFailed(T0)] };
    const { name, ag } = await ownedPair(failed);
    await postEvent(s.url, agEvent(ag));
    expect(readyOfPs(await getPackageSource(name, kc))).toMatchObject({
      status: 'False',
      reason: 'BuildFailed',
      message: buildFailed(T0).message,
    });
  });

  it('shows Unknown/AwaitingSourceWatcherRecovery with N/5 while a window is open, never the marker', async () => {
    const s = await startSurface(new SettableClock(T0 + 100_000));
    const forced = { ...stuckStatus(T0), conditions: [marker(T0 + 90_000)] };
    const { name, ag } = await ownedPair(forced, trackingAnnotations(2, T0 + 90_000));
    await postEvent(s.url, agEvent(ag));
    const r = readyOfPs(await getPackageSource(name, kc));
    expect(r).toMatchObject({ status: 'Unknown', reason: REASON_AWAITING });
    expect(r?.message).toMatch(/force-drift 2\/5/);
    expect(JSON.stringify(await getPackageSource(name, kc))).not.toContain(REASON_FORCED);
  });

  it('surfaces SourceWatcherStalled on the stalled verdict, naming the AG, the attempts and the upstream issue', async () => {
    const s = await startSurface(new SettableClock(T0 + 250_000));
    const forced = { ...stuckStatus(T0), conditions: [marker(T0)] };
    const { name, ag } = await ownedPair(forced, trackingAnnotations(5, T0));
    const verdict = actionEvent(ACTION_STALLED, ag, 5, T0);
    expect((await postEvent(s.url, verdict, 'structured')).body).toEqual({ result: 'updated' });
    const r = readyOfPs(await getPackageSource(name, kc));
    expect(r).toMatchObject({ status: 'False', reason: REASON_STALLED });
    expect(r?.message).toContain(`${agRefOf(ag).namespace}/${name}`);
    expect(r?.message).toContain('fluxcd/pkg#934');
    expect(r?.message).toMatch(/5/);
    expect(r?.message).toMatch(/restart/i);
  });

  it('an AG with no PackageSource owner gets no PackageSource write', async () => {
    const s = await startSurface(new SettableClock(T0 + 60_000));
    const ag = await createAgWithStatus(kc, healthyStatus(T0));
    suite.proxy.clearCalls();
    expect((await postEvent(s.url, agEvent(ag))).body).toEqual({ result: 'no-owner' });
    expect(suite.proxy.count({ clientTag: 'surface-stalled', resource: 'packagesources' })).toBe(0);
  });

  it('a missing PackageSource answers 200', async () => {
    // In a cluster the owner is missing only between its deletion and the garbage collector
    // deleting the AG (an AG created with an absent owner is collected at once): the owner
    // exists, and surface-stalled is told it does not.
    const { s, ag } = await healthyPairBehindFault({ status: 404 });
    expect(await postEvent(s.url, agEvent(ag))).toMatchObject({
      status: 200,
      body: { result: 'no-packagesource' },
    });
  });

  it('a missing AG answers 200', async () => {
    const s = await startSurface(new SettableClock(T0));
    const ghost = {
      kind: 'ArtifactGenerator',
      metadata: { namespace: 'cozy-system', name: 'no-such-ag', resourceVersion: '1' },
    };
    expect(await postEvent(s.url, agEvent(ghost))).toMatchObject({
      status: 200,
      body: { result: 'gone' },
    });
  });

  it('writes nothing in observe mode', async () => {
    const s = await startSurface(new SettableClock(T0 + 60_000), {
      env: { RECOVERY_MODE: 'observe' },
    });
    const { name, ag } = await ownedPair(healthyStatus(T0));
    const before = await getPackageSource(name, kc);
    expect((await postEvent(s.url, agEvent(ag))).body).toEqual({ result: 'observed' });
    expect((await getPackageSource(name, kc)).metadata?.resourceVersion).toBe(
      before.metadata?.resourceVersion,
    );
  });

  it('re-reads fresh and retries after a conflict on the status write', async () => {
    const { s, name, ag } = await healthyPairBehindFault({ status: 409, verb: 'patch', times: 1 });
    expect((await postEvent(s.url, agEvent(ag))).body).toEqual({ result: 'updated' });
    expect(readyOfPs(await getPackageSource(name, kc))?.status).toBe('True');
  });

  it('answers 503 on a transient API error, and the redelivery completes', async () => {
    const { s, ag } = await healthyPairBehindFault({ status: 500, verb: 'patch' });
    expect((await postEvent(s.url, agEvent(ag))).status).toBe(503);
    suite.proxy.clearFaults();
    expect((await postEvent(s.url, agEvent(ag))).body).toEqual({ result: 'updated' });
  });

  it('the resync brings every owned PackageSource in step', async () => {
    const s = await startSurface(new SettableClock(T0 + 60_000));
    const pairs = await Promise.all([
      ownedPair(healthyStatus(T0)),
      ownedPair({
        ...healthyStatus(T0),
        conditions: [readyWith('False', 'SourceFetchFailed', T0)],
      }),
    ]);
    expect((await postEvent(s.url, resyncPing({}))).status).toBe(200);
    expect(readyOfPs(await getPackageSource(pairs[0].name, kc))?.reason).toBe('Succeeded');
    expect(readyOfPs(await getPackageSource(pairs[1].name, kc))?.reason).toBe('SourceFetchFailed');
    // A second resync writes nothing.
    suite.proxy.clearCalls();
    await postEvent(s.url, resyncPing({}));
    expect(
      suite.proxy.count({
        clientTag: 'surface-stalled',
        verb: ['patch', 'update', 'create', 'delete'],
      }),
    ).toBe(0);
  });

  it('answers 400 for malformed AG data and malformed verdict data', async () => {
    const s = await startSurface(new SettableClock(T0));
    expect(
      (
        await postEvent(
          s.url,
          cloudEvent({
            type: APISERVER_UPDATE,
            data: { metadata: {} },
            extensions: { kind: 'ArtifactGenerator' },
          }),
        )
      ).status,
    ).toBe(400);
    expect(
      (await postEvent(s.url, cloudEvent({ type: ACTION_STALLED, data: { name: 'x' } }))).status,
    ).toBe(400);
  });
});

describe('surface-stalled: an AG with no Ready condition', () => {
  it('projects PackageSource Ready Unknown/ArtifactGeneratorNotReady', async () => {
    const s = await startSurface(new SettableClock(T0 + 5_000));
    const { name, ag } = await ownedPairWith(kc, {});
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

describe('surface-stalled: an AG event', () => {
  beforeEach(() => {
    suite.proxy.clearFaults();
    suite.proxy.clearCalls();
  });

  /** An owned AG stuck since T0. */
  const stuckOwnedAg = async () => (await ownedPairWith(kc, stuckStatus(T0))).ag;

  /** surface-stalled's reads of an AG. */
  const surfaceAgReads: CallMatch = {
    clientTag: 'surface-stalled',
    verb: 'get',
    resource: 'artifactgenerators',
  };

  describe('the AG read for an AG event', () => {
    it.each<[string, (rv: string) => string, number]>([
      ['the event carries the cached version: one cached read', (rv) => rv, 1],
      [
        'the event is older than the cache (a redelivery): one cached read',
        (rv) => String(BigInt(rv) - 1n),
        1,
      ],
      [
        'the event is newer than the cache: a fresh read too',
        (rv) => String(BigInt(rv) + 1000n),
        2,
      ],
      ['the event version is not a number: a fresh read too', () => 'not-a-revision', 2],
    ])('%s', async (_label, eventRv, reads) => {
      const ag = await stuckOwnedAg();
      const s = await suite.startSurfaceStalled(new SettableClock(T0 + 1_000));
      const rv = ag.metadata?.resourceVersion ?? '';
      const seen = { ...ag, metadata: { ...ag.metadata, resourceVersion: eventRv(rv) } };
      // The watch cache catches up with the write first, so the cached read returns `ag` itself.
      await expect
        .poll(async () => (await cachedArtifactGeneratorRv(agRefOf(ag), kc)) === rv, {
          timeout: 5_000,
        })
        .toBe(true);
      suite.proxy.clearCalls();
      const answer = await postEvent(s.url, agEvent(seen));
      expect(answer.status).toBe(200);
      expect(suite.proxy.count(surfaceAgReads)).toBe(reads);
    });
  });

  /** A healthy owned pair and a surface-stalled a minute after its build. */
  async function healthyPairAndSurface() {
    const { packageSource, ag } = await ownedPairWith(kc, healthyStatus(T0));
    const s = await suite.startSurfaceStalled(new SettableClock(T0 + 60_000));
    return { packageSource, ag, s };
  }

  describe("the event's AG only saves work", () => {
    it('a forged event (Ready False on a healthy AG): the AG is read, and nothing is written', async () => {
      const { packageSource, ag, s } = await healthyPairAndSurface();
      expect((await postEvent(s.url, agEvent(ag))).body).toEqual({ result: 'updated' });
      const name = packageSource.metadata?.name ?? '';
      const before = await getPackageSource(name, kc);
      expect(readyOfPs(before)?.status).toBe('True');
      const forged = {
        ...ag,
        status: { ...ag.status, conditions: [buildFailed(T0 + 30_000)] },
      };
      suite.proxy.clearCalls();
      expect((await postEvent(s.url, agEvent(forged))).body).toEqual({ result: 'in-step' });
      expect(suite.proxy.count(surfaceAgReads)).toBeGreaterThanOrEqual(1);
      const after = await getPackageSource(name, kc);
      expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    });
  });

  describe("the event's owner is unverified input", () => {
    it('an owner that is not a Kubernetes name: the AG is read and decides, no error', async () => {
      const { packageSource, ag, s } = await healthyPairAndSurface();
      const owners = (ag.metadata?.ownerReferences ?? []).map((o) => ({
        ...o,
        name: 'Not_A_Name',
      }));
      const forged = { ...ag, metadata: { ...ag.metadata, ownerReferences: owners } };
      expect(await postEvent(s.url, agEvent(forged))).toMatchObject({
        status: 200,
        body: { result: 'updated' },
      });
      const ps = await getPackageSource(packageSource.metadata?.name ?? '', kc);
      expect(readyOfPs(ps)?.status).toBe('True');
    });
  });
});

describe('surface-stalled: one sync per AG at a time', () => {
  const HOLD_MS = 1_500;

  beforeEach(() => {
    suite.proxy.clearFaults();
    suite.proxy.clearCalls();
  });

  const surface = (more: Partial<CallMatch> = {}): CallMatch => ({
    clientTag: 'surface-stalled',
    ...more,
  });
  const psReads = surface({ verb: 'get', resource: 'packagesources' });
  const agReads = surface({ verb: 'get', resource: 'artifactgenerators' });
  const psWrites = surface({ verb: 'patch', resource: 'packagesources' });

  /** An owned pair whose AG has `status`, once the watch cache holds its PackageSource. */
  async function cachedPair(status: ArtifactGeneratorStatus) {
    const { packageSource, artifactGenerator } = await createOwnedPair({}, kc);
    const ag = await writeArtifactGeneratorStatus(agRefOf(artifactGenerator), status, kc);
    const name = packageSource.metadata?.name ?? '';
    await cacheHolds(name);
    return { name, ag };
  }

  async function cacheHolds(name: string): Promise<void> {
    const rv = (await getPackageSource(name, kc)).metadata?.resourceVersion;
    await expect.poll(() => cachedPackageSourceRv(name, kc), { timeout: 5_000 }).toBe(rv);
  }

  /**
   * Posts `event` with the first `match` call held by `fault` (HOLD_MS), and resolves once that call
   * has reached the proxy: the delivery's sync is then running.
   */
  async function postHeld(
    url: string,
    event: Parameters<typeof postEvent>[1],
    match: CallMatch,
    fault: FaultRule = { kind: 'slow', delayMs: HOLD_MS },
  ): Promise<{ answer: Promise<Answer> }> {
    suite.proxy.addFault({ ...fault, match, times: 1 });
    const before = suite.proxy.count(match);
    const answer = postEvent(url, event);
    await expect.poll(() => suite.proxy.count(match), { timeout: 5_000 }).toBe(before + 1);
    // In an object: an async function returning a promise would wait for it.
    return { answer };
  }

  const start = () => startSurface(new SettableClock(T0 + 60_000));

  it('a second delivery of a version the running sync read answers "covered", with no call of its own', async () => {
    const s = await start();
    const { name, ag } = await cachedPair(healthyStatus(T0));
    const { answer: first } = await postHeld(s.url, agEvent(ag), agReads);
    const second = postEvent(s.url, agEvent(ag));
    expect((await first).body).toEqual({ result: 'updated' });
    expect(await second).toMatchObject({ status: 200, body: { result: 'covered' } });
    const calls = suite.proxy.callsMatching(surface());
    expect(calls.map((c) => `${c.verb} ${c.resource} ${c.status}`)).toEqual([
      'get packagesources 200',
      'get artifactgenerators 200',
      'patch packagesources 200',
    ]);
    expect(readyOfPs(await getPackageSource(name, kc))?.status).toBe('True');
  });

  it('a newer version waits its turn without a call, then syncs on it', async () => {
    const s = await start();
    const { name, ag } = await cachedPair(healthyStatus(T0));
    const { answer: first } = await postHeld(s.url, agEvent(ag), psWrites);
    // The AG fails honestly while the first write is held: a version the first sync did not read.
    const failed = {
      ...healthyStatus(T0),
      conditions: [buildFailed(T0 + 5_000)],
    };
    const newer: ArtifactGenerator = await writeArtifactGeneratorStatus(agRefOf(ag), failed, kc);
    const callsBefore = suite.proxy.count(surface());
    const second = postEvent(s.url, agEvent(newer));
    await sleep(300);
    expect(suite.proxy.count(surface())).toBe(callsBefore);
    expect((await first).body).toEqual({ result: 'updated' });
    expect((await second).body).toEqual({ result: 'updated' });
    expect(readyOfPs(await getPackageSource(name, kc))).toMatchObject({
      status: 'False',
      reason: 'BuildFailed',
    });
  });

  it('a running sync that fails (its AG read held, then cut) covers nobody: the waiter syncs', async () => {
    const s = await start();
    const { name, ag } = await cachedPair(healthyStatus(T0));
    const cut: FaultRule = { kind: 'timeout', delayMs: HOLD_MS };
    const { answer: first } = await postHeld(s.url, agEvent(ag), agReads, cut);
    // Its in-place retry of the read (ADR 70) fails too.
    suite.proxy.addFault({ kind: 'status', status: 500, match: agReads, times: 1 });
    const second = postEvent(s.url, agEvent(ag));
    expect((await first).status).toBe(503);
    expect((await second).body).toEqual({ result: 'updated' });
    expect(readyOfPs(await getPackageSource(name, kc))?.status).toBe('True');
  });

  it("a running sync that decided on the event's AG alone covers nobody", async () => {
    const s = await start();
    const { name, ag } = await cachedPair(healthyStatus(T0));
    expect((await postEvent(s.url, agEvent(ag))).body).toEqual({ result: 'updated' });
    await cacheHolds(name);
    // An event in step with the PackageSource, claiming a version far ahead (unverified input).
    const claimed = { ...ag, metadata: { ...ag.metadata, resourceVersion: '999999999' } };
    suite.proxy.clearCalls();
    const { answer: first } = await postHeld(s.url, agEvent(claimed), psReads);
    const second = postEvent(s.url, agEvent(claimed));
    expect((await first).body).toEqual({ result: 'in-step' });
    expect((await second).body).toEqual({ result: 'in-step' });
    expect(suite.proxy.count(psReads)).toBe(2);
  });
});
