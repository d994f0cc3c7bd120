// surface-stalled takes one sync per AG at a time (docs/adr/0050-one-sync-per-ag-at-a-time.md),
// over real HTTP against the real test API server through the fault-injecting proxy. A call held
// by the proxy keeps the first delivery's sync running while a second delivery about the same AG
// arrives:
// - the second answers "covered" after its one cached read when the first read its AG version;
// - a newer version waits its turn (nothing but that read while the first runs), then syncs;
// - a first sync that fails covers nobody;
// - an event in step with the PackageSource does not wait.

import { setTimeout as sleep } from 'node:timers/promises';
import { beforeEach, describe, expect, it } from 'vitest';
import { findCondition } from '../../../shared/core/index.js';
import type {
  ArtifactGenerator,
  ArtifactGeneratorStatus,
  Condition,
  PackageSource,
} from '../../../shared/core/types.js';
import {
  agRefOf,
  cachedPackageSourceRv,
  createOwnedPair,
  getPackageSource,
  writeArtifactGeneratorStatus,
} from '../../support/apiserver.js';
import { healthyStatus, ready } from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import { agResourceEvent, postEvent, type Answer } from '../../support/http-events.js';
import type { CallMatch, FaultRule } from '../../support/kube-proxy.js';
import { functionFile } from './suite-kit.js';

const { T0, kc, suite } = functionFile('sync-turns');
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

const readyOfPs = (ps: PackageSource): Condition | undefined =>
  findCondition(ps.status?.conditions, 'Ready');

/** An owned pair whose AG has `status`, once the watch cache holds its PackageSource. */
async function ownedPair(status: ArtifactGeneratorStatus) {
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

const start = () => suite.startSurfaceStalled(new SettableClock(T0 + 60_000));

describe('surface-stalled: one sync per AG at a time', () => {
  it('a second delivery of a version the running sync read answers "covered" after one cached read', async () => {
    const s = await start();
    const { name, ag } = await ownedPair(healthyStatus(T0));
    const { answer: first } = await postHeld(s.url, agResourceEvent(ag), agReads);
    const second = postEvent(s.url, agResourceEvent(ag));
    expect((await first).body).toEqual({ result: 'updated' });
    expect(await second).toMatchObject({ status: 200, body: { result: 'covered' } });
    const calls = suite.proxy.callsMatching(surface());
    expect(calls.map((c) => `${c.verb} ${c.resource} ${c.status}`).sort()).toEqual([
      'get artifactgenerators 200',
      'get packagesources 200',
      'get packagesources 200',
      'patch packagesources 200',
    ]);
    expect(readyOfPs(await getPackageSource(name, kc))?.status).toBe('True');
  });

  it('a newer version waits its turn, then syncs on a fresh read: no Conflict', async () => {
    const s = await start();
    const { name, ag } = await ownedPair(healthyStatus(T0));
    const { answer: first } = await postHeld(s.url, agResourceEvent(ag), psWrites);
    // The AG fails honestly while the first write is held: a version the first sync did not read.
    const failed = {
      ...healthyStatus(T0),
      conditions: [ready('False', 'BuildFailed', T0 + 5_000)],
    };
    const newer: ArtifactGenerator = await writeArtifactGeneratorStatus(agRefOf(ag), failed, kc);
    const callsBefore = suite.proxy.count(surface());
    const second = postEvent(s.url, agResourceEvent(newer));
    await sleep(300);
    // Its cached PackageSource read (not in step with the failed AG), then nothing until its turn.
    expect(suite.proxy.count(surface())).toBe(callsBefore + 1);
    expect((await first).body).toEqual({ result: 'updated' });
    expect((await second).body).toEqual({ result: 'updated' });
    const writes = suite.proxy.callsMatching(psWrites).map((c) => c.status);
    expect(writes).toEqual([200, 200]);
    const afterTurn = suite.proxy.callsMatching(psReads).slice(-1)[0];
    expect(afterTurn?.path.includes('resourceVersion=0')).toBe(false);
    expect(readyOfPs(await getPackageSource(name, kc))).toMatchObject({
      status: 'False',
      reason: 'BuildFailed',
    });
  });

  it('a running sync that fails (its AG read held, then cut) covers nobody: the waiter syncs', async () => {
    const s = await start();
    const { name, ag } = await ownedPair(healthyStatus(T0));
    const cut: FaultRule = { kind: 'timeout', delayMs: HOLD_MS };
    const { answer: first } = await postHeld(s.url, agResourceEvent(ag), agReads, cut);
    const second = postEvent(s.url, agResourceEvent(ag));
    expect((await first).status).toBe(503);
    expect((await second).body).toEqual({ result: 'updated' });
    expect(readyOfPs(await getPackageSource(name, kc))?.status).toBe('True');
  });

  it('an event in step with the PackageSource does not wait for a running sync', async () => {
    const s = await start();
    const { name, ag } = await ownedPair(healthyStatus(T0));
    expect((await postEvent(s.url, agResourceEvent(ag))).body).toEqual({ result: 'updated' });
    await cacheHolds(name);
    suite.proxy.clearCalls();
    // A first event shows the AG failed (stale or forged): not in step, so it reads the AG, held.
    const forged: ArtifactGenerator = {
      ...ag,
      status: { ...ag.status, conditions: [ready('False', 'BuildFailed', T0 + 30_000)] },
    };
    const { answer: first } = await postHeld(s.url, agResourceEvent(forged), agReads);
    let firstDone = false;
    void first.then(() => (firstDone = true));
    expect((await postEvent(s.url, agResourceEvent(ag))).body).toEqual({ result: 'in-step' });
    expect(firstDone).toBe(false);
    // The AG as read is healthy: the forged event writes nothing.
    expect((await first).body).toEqual({ result: 'in-step' });
    expect(suite.proxy.count(psWrites)).toBe(0);
  });
});
