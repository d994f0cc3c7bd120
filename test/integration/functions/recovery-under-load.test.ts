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

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ACTION_FORCE,
  ALARM_MARGIN_MS,
  ANNOTATION_ALARM_MOMENT,
  ANNOTATION_ATTEMPTS,
  ANNOTATION_LAST_RECOVERY_AT,
  ANNOTATION_REQUESTED_AT,
  REASON_FORCED,
  formatTimeNano,
  parseTime,
  readyOf,
  requestedAtFor,
} from '../../../shared/core/index.js';
import type { ArtifactGenerator, PackageSource } from '../../../shared/core/types.js';
import { AG_API_GROUP, AG_PLURAL } from '../../../shared/core/types.js';
import {
  AG_VERSION,
  MERGE_PATCH,
  agRefOf,
  createOwnedPair,
  customObjects,
  getArtifactGenerator,
  getPackageSource,
  testKubeConfig,
  writeArtifactGeneratorStatus,
} from '../../support/apiserver.js';
import { healthyStatus, ready, rebuildAg, stuckStatus } from '../../support/ag-states.js';
import { createLogger, type Logger } from '../../../shared/runtime/logger.js';
import { SettableClock, startFunction } from '../../harness/functions.js';
import {
  actionEvent,
  agResourceEvent,
  postEvent,
  startEventSink,
  type EventSink,
  type Started,
} from '../../support/http-events.js';
import { startKubeProxy, type CallMatch, type KubeProxy } from '../../support/kube-proxy.js';

const T0 = Math.floor(Date.now() / 1000) * 1000;
const GRACE_MS = 30_000; // testConfig's time rule
const kc = testKubeConfig();
let proxy: KubeProxy;
let sink: EventSink;
const servers: Started[] = [];
const NS = 'source-watcher-recovery';
const ALARM = 'recovery-alarm';
const pingApi = {
  group: 'sources.knative.dev',
  version: 'v1',
  plural: 'pingsources',
  namespace: NS,
} as const;

beforeAll(async () => {
  proxy = await startKubeProxy(kc, { tag: 'under-load' });
  sink = await startEventSink();
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await sink.close();
  await proxy.stop();
  await deleteAlarm();
});

async function deleteAlarm(): Promise<void> {
  await customObjects(kc)
    .deleteNamespacedCustomObject({ ...pingApi, name: ALARM })
    .catch(() => undefined);
}

async function armedMoment(): Promise<number | null> {
  const ps = (await customObjects(kc).getNamespacedCustomObject({ ...pingApi, name: ALARM })) as {
    metadata: { annotations?: Record<string, string> };
  };
  return parseTime(ps.metadata.annotations?.[ANNOTATION_ALARM_MOMENT]);
}
beforeEach(() => {
  proxy.clearFaults();
  proxy.clearCalls();
});

async function start(
  fn: 'detect' | 'force-drift' | 'surface-stalled',
  clock: SettableClock,
  logger?: Logger,
): Promise<Started> {
  const s = await startFunction({
    fn,
    kubeConfig: proxy.kubeConfig(fn),
    clock,
    ...(logger !== undefined ? { logger } : {}),
    ...(fn === 'detect' ? { sinkUrl: sink.url } : {}),
  });
  servers.push(s);
  return s;
}

async function annotate(ag: ArtifactGenerator, annotations: Record<string, string>) {
  return (await customObjects(kc).patchNamespacedCustomObject(
    {
      group: AG_API_GROUP,
      version: AG_VERSION,
      plural: AG_PLURAL,
      ...agRefOf(ag),
      body: { metadata: { annotations } },
    },
    MERGE_PATCH,
  )) as ArtifactGenerator;
}

/** An owned AG stuck since T0 (past the time rule's grace at T0 + GRACE_MS + 1 s). */
async function stuckOwnedAg(): Promise<ArtifactGenerator> {
  const { artifactGenerator } = await createOwnedPair({}, kc);
  return writeArtifactGeneratorStatus(agRefOf(artifactGenerator), stuckStatus(T0), kc);
}

const ownerRead: CallMatch = { clientTag: 'force-drift', verb: 'get', resource: 'packagesources' };

describe('force-drift: the owner PackageSource read', () => {
  it('fails transiently (500): the force still happens, claimed, marked and bumped', async () => {
    const ag = await stuckOwnedAg();
    const now = T0 + GRACE_MS + 1_000;
    const f = await start('force-drift', new SettableClock(now));
    proxy.addFault({ kind: 'status', status: 500, match: ownerRead });
    expect(await postEvent(f.url, actionEvent(ACTION_FORCE, ag, 0, now))).toMatchObject({
      status: 200,
      body: { result: 'forced' },
    });
    expect(proxy.count(ownerRead)).toBe(1);
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBe('1');
    expect(after.metadata?.annotations?.[ANNOTATION_REQUESTED_AT]).toBe(requestedAtFor(now));
    expect(readyOf(after)?.reason).toBe(REASON_FORCED);
  });

  it('fails transiently on two forces in one process: one warn line, then debug', async () => {
    const now = T0 + GRACE_MS + 1_000;
    const lines: { level: string; msg: string }[] = [];
    const logger = createLogger({
      name: 'force-drift',
      level: 'debug',
      destination: { write: (s: string) => void lines.push(JSON.parse(s) as (typeof lines)[0]) },
    });
    const f = await start('force-drift', new SettableClock(now), logger);
    proxy.addFault({ kind: 'status', status: 500, match: ownerRead });
    for (const ag of [await stuckOwnedAg(), await stuckOwnedAg()]) {
      expect(await postEvent(f.url, actionEvent(ACTION_FORCE, ag, 0, now))).toMatchObject({
        status: 200,
        body: { result: 'forced' },
      });
    }
    const unreadable = lines.filter((l) => l.msg.startsWith('owner PackageSource unreadable'));
    expect(unreadable.map((l) => l.level)).toEqual(['warn', 'debug']);
  });

  it('is forbidden (403): the force stops, nothing written', async () => {
    const ag = await stuckOwnedAg();
    const now = T0 + GRACE_MS + 1_000;
    const f = await start('force-drift', new SettableClock(now));
    proxy.addFault({ kind: 'status', status: 403, match: ownerRead });
    const answer = await postEvent(f.url, actionEvent(ACTION_FORCE, ag, 0, now));
    expect(answer.status).toBe(500);
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.resourceVersion).toBe(ag.metadata?.resourceVersion);
  });
});

describe('force-drift: a force event whose claim is unfinished', () => {
  // Attempt 1 claimed 2 s ago (inside RESUME_SETTLE_MS, 10 s); its marker and bump never landed.
  async function claimedUnfinished(): Promise<{ ag: ArtifactGenerator; claimAt: number }> {
    const { last } = await rebuildAg(kc, { at: T0, lose: true });
    const claimAt = T0 + GRACE_MS + 1_000;
    const ag = await annotate(last, {
      [ANNOTATION_ATTEMPTS]: '1',
      [ANNOTATION_LAST_RECOVERY_AT]: formatTimeNano(claimAt),
    });
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
    const f = await start('force-drift', new SettableClock(claimAt + afterClaimMs));
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
    await deleteAlarm();
    const now = T0 + 10_000;
    const clock = new SettableClock(now);
    const d = await start('detect', clock);
    // Young enough that its grace ends 1 s from now: the alarm is armed at the margin.
    const { artifactGenerator } = await createOwnedPair({}, kc);
    const since = now + 1_000 - GRACE_MS - 1;
    const ag = await writeArtifactGeneratorStatus(
      agRefOf(artifactGenerator),
      stuckStatus(since),
      kc,
    );
    const armedAt = Math.ceil((now + ALARM_MARGIN_MS) / 1000) * 1000;
    const alarmWrite: CallMatch = {
      clientTag: 'detect',
      verb: ['create', 'patch'],
      resource: 'pingsources',
    };
    proxy.addFault({ kind: 'slow', delayMs: 1_000, times: 1, match: alarmWrite });
    // While the first write is held, the clock moves on.
    let answered = false;
    const jump = (async () => {
      while (!answered && proxy.count(alarmWrite) === 0) await sleep(5);
      clock.t = now + clockJumpMs;
    })();
    const answer = await postEvent(d.url, agResourceEvent(ag));
    answered = true;
    await jump;
    expect(answer.status).toBe(200);
    const moment = await armedMoment();
    if (want === 'kept') {
      expect(moment).toBe(armedAt);
    } else {
      expect(moment).toBeGreaterThanOrEqual(now + clockJumpMs + ALARM_MARGIN_MS);
    }
  });
});

describe('surface-stalled: the AG read for an AG event', () => {
  const agReads: CallMatch = {
    clientTag: 'surface-stalled',
    verb: 'get',
    resource: 'artifactgenerators',
  };

  it.each<[string, (rv: string) => string, number]>([
    ['the event carries the cached version: one cached read', (rv) => rv, 1],
    ['the event is older than the cache (a redelivery): one cached read', (rv) => older(rv), 1],
    ['the event is newer than the cache: a fresh read too', (rv) => String(BigInt(rv) + 1000n), 2],
    ['the event version is not a number: a fresh read too', () => 'not-a-revision', 2],
  ])('%s', async (_label, eventRv, reads) => {
    const { artifactGenerator } = await createOwnedPair({}, kc);
    const ag = await writeArtifactGeneratorStatus(agRefOf(artifactGenerator), stuckStatus(T0), kc);
    const s = await start('surface-stalled', new SettableClock(T0 + 1_000));
    const rv = ag.metadata?.resourceVersion ?? '';
    const seen = { ...ag, metadata: { ...ag.metadata, resourceVersion: eventRv(rv) } };
    // The watch cache catches up with the write first, so the cached read returns `ag` itself.
    await expect.poll(async () => (await cachedRv(ag)) === rv, { timeout: 5_000 }).toBe(true);
    proxy.clearCalls();
    const answer = await postEvent(s.url, agResourceEvent(seen));
    expect(answer.status).toBe(200);
    expect(proxy.count(agReads)).toBe(reads);
  });
});

/** A healthy owned pair and a surface-stalled a minute after its build. */
async function healthyPairAndSurface() {
  const { packageSource, artifactGenerator } = await createOwnedPair({}, kc);
  const ag = await writeArtifactGeneratorStatus(agRefOf(artifactGenerator), healthyStatus(T0), kc);
  const s = await start('surface-stalled', new SettableClock(T0 + 60_000));
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
      status: { ...ag.status, conditions: [ready('False', 'BuildFailed', T0 + 30_000)] },
    };
    proxy.clearCalls();
    expect((await postEvent(s.url, agResourceEvent(forged))).body).toEqual({ result: 'in-step' });
    expect(
      proxy.count({ clientTag: 'surface-stalled', verb: 'get', resource: 'artifactgenerators' }),
    ).toBeGreaterThanOrEqual(1);
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

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function older(rv: string): string {
  return String(BigInt(rv) - 1n);
}

/** The AG's resourceVersion as the API server's watch cache has it (a list at resourceVersion 0). */
async function cachedRv(ag: ArtifactGenerator): Promise<string | undefined> {
  const { namespace, name } = agRefOf(ag);
  const list = (await customObjects(kc).listNamespacedCustomObject({
    group: AG_API_GROUP,
    version: AG_VERSION,
    plural: AG_PLURAL,
    namespace,
    fieldSelector: `metadata.name=${name}`,
    resourceVersion: '0',
  })) as { items: ArtifactGenerator[] };
  return list.items[0]?.metadata?.resourceVersion;
}
