// surface-stalled over real HTTP against the real test API server: the only writer of
// PackageSource Ready.

import { afterEach, describe, expect, it } from 'vitest';
import {
  ACTION_STALLED,
  APISERVER_UPDATE,
  REASON_AWAITING,
  REASON_FORCED,
  REASON_STALLED,
  findCondition,
  formatTimeSeconds,
} from '../../../shared/core/index.js';
import type {
  ArtifactGeneratorStatus,
  Condition,
  PackageSource,
} from '../../../shared/core/objects/types.js';
import {
  agRefOf,
  createPackageSource,
  getPackageSource,
  makePackageSource,
  uniqueName,
  writePackageSourceStatus,
} from '../../support/apiserver.js';
import { createAgWithStatus, healthyStatus, stuckStatus } from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import {
  actionEvent,
  agResourceEvent as agEvent,
  cloudEvent,
  postEvent,
} from '../../support/http-events.js';
import { functionFile, trackingAnnotations } from './suite-kit.js';
import { resyncPing } from '../../support/http-events.js';
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
