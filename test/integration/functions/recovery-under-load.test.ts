// The recovery's own calls under the first-install storm (docs/adr/0044-recovery-under-load.md),
// against the real test API server through the fault-injecting proxy:
// - force-drift forces when its owner PackageSource read fails transiently (the deletion check
//   fails open, warned once per process), and still stops when the read is forbidden;
// - a force event whose own claim is unfinished finishes it once the claim is 2 s old, instead of
//   after the 10 s settle (younger: 503, so that its redelivery does); an event that asked for
//   another attempt still waits;
// - detect's follow-up alarm, written by a slow API server so late that the PingSource adapter
//   might miss its moment, is moved out again;
// - surface-stalled answers an AG event from the PackageSource alone when it is in step with the
//   event's AG; otherwise it reads the AG once when the cache is at least as new as the event, and
//   fresh only when the cache is older; a forged event never causes a write.

import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ACTION_FORCE,
  ALARM_MARGIN_MS,
  ANNOTATION_ATTEMPTS,
  ANNOTATION_LAST_RECOVERY_AT,
  ANNOTATION_REQUESTED_AT,
  REASON_FORCED,
  formatTimeNano,
  readyOf,
  requestedAtFor,
} from '../../../shared/core/index.js';
import {
  agRefOf,
  createOwnedPair,
  cachedArtifactGeneratorRv,
  getArtifactGenerator,
  getPackageSource,
  writeArtifactGeneratorStatus,
} from '../../support/apiserver.js';
import { healthyStatus, rebuildAg, stuckStatus } from '../../support/ag-states.js';
import type {
  ArtifactGenerator,
  ArtifactGeneratorStatus,
  PackageSource,
} from '../../../shared/core/objects/types.js';
import { SettableClock } from '../../harness/functions.js';
import { actionEvent, agResourceEvent, postEvent } from '../../support/http-events.js';
import type { CallMatch } from '../../support/kube-proxy.js';
import type { StartOptions } from '../../support/function-suite.js';
import { deleteAlarm, readAlarm } from '../../support/recovery-alarm.js';
import { capturingLogger, functionFile, patchAgMetadata } from './suite-kit.js';
import { buildFailed } from '../../support/conditions.js';

const { T0, kc, suite } = functionFile('under-load');
const GRACE_MS = 30_000; // testConfig's time rule

afterAll(() => deleteAlarm(kc));
beforeEach(() => {
  suite.proxy.clearFaults();
  suite.proxy.clearCalls();
});

/** A new owned pair, its AG's status `status`. */
async function ownedPairWith(status: ArtifactGeneratorStatus) {
  const { packageSource, artifactGenerator } = await createOwnedPair({}, kc);
  const ag = await writeArtifactGeneratorStatus(agRefOf(artifactGenerator), status, kc);
  return { packageSource, ag };
}

/** An owned AG stuck since T0 (past the time rule's grace at T0 + GRACE_MS + 1 s). */
const stuckOwnedAg = async () => (await ownedPairWith(stuckStatus(T0))).ag;

/** surface-stalled's reads of an AG. */
const surfaceAgReads: CallMatch = {
  clientTag: 'surface-stalled',
  verb: 'get',
  resource: 'artifactgenerators',
};

const ownerRead: CallMatch = { clientTag: 'force-drift', verb: 'get', resource: 'packagesources' };

describe('force-drift: the owner PackageSource read', () => {
  const now = T0 + GRACE_MS + 1_000;
  const forced = { status: 200, body: { result: 'forced' } };
  /** Starts force-drift at `now` with every owner read answered `status`; it posts a first force. */
  async function ownerReadAnswers(status: number, opts: StartOptions = {}) {
    const f = await suite.startForceDrift(new SettableClock(now), opts);
    suite.proxy.addFault({ kind: 'status', status, match: ownerRead });
    return (ag: ArtifactGenerator) => postEvent(f.url, actionEvent(ACTION_FORCE, ag, 0, now));
  }

  it('fails transiently (500): the force still happens, claimed, marked and bumped', async () => {
    const ag = await stuckOwnedAg();
    const force = await ownerReadAnswers(500);
    expect(await force(ag)).toMatchObject(forced);
    expect(suite.proxy.count(ownerRead)).toBe(1);
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBe('1');
    expect(after.metadata?.annotations?.[ANNOTATION_REQUESTED_AT]).toBe(requestedAtFor(now));
    expect(readyOf(after)?.reason).toBe(REASON_FORCED);
  });

  it('fails transiently on two forces in one process: one warn line, then debug', async () => {
    const { logger, logs } = capturingLogger('force-drift');
    const force = await ownerReadAnswers(500, { logger });
    for (const ag of [await stuckOwnedAg(), await stuckOwnedAg()]) {
      expect(await force(ag)).toMatchObject(forced);
    }
    const unreadable = logs.records.filter((l) =>
      l.msg.startsWith('owner PackageSource unreadable'),
    );
    expect(unreadable.map((l) => l.level)).toEqual(['warn', 'debug']);
  });

  it('is forbidden (403): the force stops, nothing written', async () => {
    const ag = await stuckOwnedAg();
    const force = await ownerReadAnswers(403);
    expect((await force(ag)).status).toBe(500);
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.resourceVersion).toBe(ag.metadata?.resourceVersion);
  });
});

describe('force-drift: a force event whose claim is unfinished', () => {
  // Attempt 1 claimed 2 s ago (inside RESUME_SETTLE_MS, 10 s); its marker and bump never landed.
  async function claimedUnfinished(): Promise<{ ag: ArtifactGenerator; claimAt: number }> {
    const { last } = await rebuildAg(kc, { at: T0, lose: true });
    const claimAt = T0 + GRACE_MS + 1_000;
    const ag = (await patchAgMetadata(kc, agRefOf(last), {
      annotations: {
        [ANNOTATION_ATTEMPTS]: '1',
        [ANNOTATION_LAST_RECOVERY_AT]: formatTimeNano(claimAt),
      },
    })) as ArtifactGenerator;
    return { ag, claimAt };
  }

  it.each<[string, number, number, number, string, boolean]>([
    [
      'the event that asked for it (attempts 0), 2 s after the claim, finishes it: marker, then requestedAt = the claim',
      2_000,
      0,
      200,
      'resumed',
      true,
    ],
    [
      'the event that asked for it, 0.5 s after the claim: 503 for a redelivery (the claimer may still be writing), nothing written',
      500,
      0,
      503,
      'claim-in-flight',
      false,
    ],
    [
      'an event that asked for another attempt (attempts 1) waits out the settle: nothing written',
      2_000,
      1,
      200,
      'waiting',
      false,
    ],
  ])('%s', async (_label, afterClaimMs, asked, status, result, finished) => {
    const { ag, claimAt } = await claimedUnfinished();
    const f = await suite.startForceDrift(new SettableClock(claimAt + afterClaimMs));
    expect(await postEvent(f.url, actionEvent(ACTION_FORCE, ag, asked, claimAt))).toMatchObject({
      status,
      body: { result },
    });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    if (finished) {
      expect(after.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBe('1');
      expect(after.metadata?.annotations?.[ANNOTATION_REQUESTED_AT]).toBe(requestedAtFor(claimAt));
      expect(readyOf(after)?.reason).toBe(REASON_FORCED);
    } else {
      expect(after.metadata?.resourceVersion).toBe(ag.metadata?.resourceVersion);
    }
  });
});

describe("detect: the follow-up alarm's write", () => {
  it.each<[string, number, 'moved out' | 'kept']>([
    ['completes in time: the moment is kept', 0, 'kept'],
    ['completes after its moment (held by a slow API server): moved out again', 5_000, 'moved out'],
  ])('%s', async (_label, clockJumpMs, want) => {
    await deleteAlarm(kc);
    const now = T0 + 10_000;
    const clock = new SettableClock(now);
    const d = await suite.startDetect(clock);
    // Young enough that its grace ends 1 s from now: the alarm is armed at the margin.
    const { ag } = await ownedPairWith(stuckStatus(now + 1_000 - GRACE_MS - 1));
    const armedAt = Math.ceil((now + ALARM_MARGIN_MS) / 1000) * 1000;
    const alarmWrite: CallMatch = {
      clientTag: 'detect',
      verb: ['create', 'patch'],
      resource: 'pingsources',
    };
    suite.proxy.addFault({ kind: 'slow', delayMs: 1_000, times: 1, match: alarmWrite });
    // While the first write is held, the clock moves on.
    let answered = false;
    const jump = (async () => {
      while (!answered && suite.proxy.count(alarmWrite) === 0) await sleep(5);
      clock.t = now + clockJumpMs;
    })();
    const answer = await postEvent(d.url, agResourceEvent(ag));
    answered = true;
    await jump;
    expect(answer.status).toBe(200);
    const moment = (await readAlarm(kc))?.moment;
    if (want === 'kept') {
      expect(moment).toBe(armedAt);
    } else {
      expect(moment).toBeGreaterThanOrEqual(now + clockJumpMs + ALARM_MARGIN_MS);
    }
  });
});

describe('surface-stalled: the AG read for an AG event', () => {
  it.each<[string, (rv: string) => string, number]>([
    ['the event carries the cached version: one cached read', (rv) => rv, 1],
    [
      'the event is older than the cache (a redelivery): one cached read',
      (rv) => String(BigInt(rv) - 1n),
      1,
    ],
    ['the event is newer than the cache: a fresh read too', (rv) => String(BigInt(rv) + 1000n), 2],
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
    const answer = await postEvent(s.url, agResourceEvent(seen));
    expect(answer.status).toBe(200);
    expect(suite.proxy.count(surfaceAgReads)).toBe(reads);
  });
});

/** A healthy owned pair and a surface-stalled a minute after its build. */
async function healthyPairAndSurface() {
  const { packageSource, ag } = await ownedPairWith(healthyStatus(T0));
  const s = await suite.startSurfaceStalled(new SettableClock(T0 + 60_000));
  return { packageSource, ag, s };
}

describe("surface-stalled: the event's AG only saves work", () => {
  it('a forged event (Ready False on a healthy AG): the AG is read, and nothing is written', async () => {
    const { packageSource, ag, s } = await healthyPairAndSurface();
    expect((await postEvent(s.url, agResourceEvent(ag))).body).toEqual({ result: 'updated' });
    const name = packageSource.metadata?.name ?? '';
    const before = await getPackageSource(name, kc);
    expect(readyOfPs(before)?.status).toBe('True');
    const forged = {
      ...ag,
      status: { ...ag.status, conditions: [buildFailed(T0 + 30_000)] },
    };
    suite.proxy.clearCalls();
    expect((await postEvent(s.url, agResourceEvent(forged))).body).toEqual({ result: 'in-step' });
    expect(suite.proxy.count(surfaceAgReads)).toBeGreaterThanOrEqual(1);
    const after = await getPackageSource(name, kc);
    expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
  });
});

describe("surface-stalled: the event's owner is unverified input", () => {
  it('an owner that is not a Kubernetes name: the AG is read and decides, no error', async () => {
    const { packageSource, ag, s } = await healthyPairAndSurface();
    const owners = (ag.metadata?.ownerReferences ?? []).map((o) => ({ ...o, name: 'Not_A_Name' }));
    const forged = { ...ag, metadata: { ...ag.metadata, ownerReferences: owners } };
    expect(await postEvent(s.url, agResourceEvent(forged))).toMatchObject({
      status: 200,
      body: { result: 'updated' },
    });
    const ps = await getPackageSource(packageSource.metadata?.name ?? '', kc);
    expect(readyOfPs(ps)?.status).toBe('True');
  });
});

function readyOfPs(ps: PackageSource) {
  return ps.status?.conditions?.find((c) => c.type === 'Ready');
}
