// surface-stalled takes one sync per AG at a time (docs/adr/0050-one-sync-per-ag-at-a-time.md),
// over real HTTP against the real test API server through the fault-injecting proxy. A call held
// by the proxy keeps the first delivery's sync running while a second delivery about the same AG
// arrives:
// - the second answers "covered" with no call of its own when the first read its AG version;
// - a newer version waits its turn (no call while the first runs) and then syncs;
// - a first sync that fails, or that decided on the event's AG alone, covers nobody.

import { setTimeout as sleep } from 'node:timers/promises';
import { beforeEach, describe, expect, it } from 'vitest';
import { findCondition } from '../../../shared/core/index.js';
import type {
  ArtifactGenerator,
  ArtifactGeneratorStatus,
  Condition,
  PackageSource,
} from '../../../shared/core/objects/types.js';
import {
  agRefOf,
  cachedPackageSourceRv,
  createOwnedPair,
  getPackageSource,
  writeArtifactGeneratorStatus,
} from '../../support/apiserver.js';
import { healthyStatus } from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import { agResourceEvent, postEvent, type Answer } from '../../support/http-events.js';
import type { CallMatch, FaultRule } from '../../support/kube-proxy.js';
import { functionFile } from './suite-kit.js';
import { buildFailed } from '../../support/conditions.js';

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
  it('a second delivery of a version the running sync read answers "covered", with no call of its own', async () => {
    const s = await start();
    const { name, ag } = await ownedPair(healthyStatus(T0));
    const { answer: first } = await postHeld(s.url, agResourceEvent(ag), agReads);
    const second = postEvent(s.url, agResourceEvent(ag));
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
    const { name, ag } = await ownedPair(healthyStatus(T0));
    const { answer: first } = await postHeld(s.url, agResourceEvent(ag), psWrites);
    // The AG fails honestly while the first write is held: a version the first sync did not read.
    const failed = {
      ...healthyStatus(T0),
      conditions: [buildFailed(T0 + 5_000)],
    };
    const newer: ArtifactGenerator = await writeArtifactGeneratorStatus(agRefOf(ag), failed, kc);
    const callsBefore = suite.proxy.count(surface());
    const second = postEvent(s.url, agResourceEvent(newer));
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
    const { name, ag } = await ownedPair(healthyStatus(T0));
    const cut: FaultRule = { kind: 'timeout', delayMs: HOLD_MS };
    const { answer: first } = await postHeld(s.url, agResourceEvent(ag), agReads, cut);
    const second = postEvent(s.url, agResourceEvent(ag));
    expect((await first).status).toBe(503);
    expect((await second).body).toEqual({ result: 'updated' });
    expect(readyOfPs(await getPackageSource(name, kc))?.status).toBe('True');
  });

  it("a running sync that decided on the event's AG alone covers nobody", async () => {
    const s = await start();
    const { name, ag } = await ownedPair(healthyStatus(T0));
    expect((await postEvent(s.url, agResourceEvent(ag))).body).toEqual({ result: 'updated' });
    await cacheHolds(name);
    // An event in step with the PackageSource, claiming a version far ahead (unverified input).
    const claimed = { ...ag, metadata: { ...ag.metadata, resourceVersion: '999999999' } };
    suite.proxy.clearCalls();
    const { answer: first } = await postHeld(s.url, agResourceEvent(claimed), psReads);
    const second = postEvent(s.url, agResourceEvent(claimed));
    expect((await first).body).toEqual({ result: 'in-step' });
    expect((await second).body).toEqual({ result: 'in-step' });
    expect(suite.proxy.count(psReads)).toBe(2);
  });
});
