// force-drift over real HTTP against the real test API server, through a recording suite.proxy:
// the force (claim, marker, bump), its backoff and give-up, concurrency and failures; a force
// event whose own claim is unfinished finishes it once the claim is 2 s old, instead of after the
// 10 s settle (younger: 503, so that its redelivery does; docs/adr/0044-recovery-under-load.md);
// a requestedAt bumped by someone else during a wait window is not resumed as if it were an
// interrupted force of ours (docs/adr/0021); clear tracking; bad input.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ACTION_CLEAR_TRACKING,
  ACTION_FORCE,
  ANNOTATION_ATTEMPTS,
  ANNOTATION_LAST_RECOVERY_AT,
  ANNOTATION_REQUESTED_AT,
  formatTimeNano,
  parseTime,
  readyOf,
  REASON_FORCED,
  requestedAtFor,
} from '../../../shared/core/index.js';
import type { ArtifactGenerator } from '../../../shared/core/objects/types.js';
import {
  agRefOf,
  customObjects,
  getArtifactGenerator,
  writeArtifactGeneratorStatus,
} from '../../support/apiserver.js';
import {
  createAgWithStatus,
  healthyStatus,
  rebuildAg,
  stuckStatus,
} from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import { AG_RESOURCE as AG } from '../../harness/knative/index.js';
import {
  actionEvent as sharedActionEvent,
  cloudEvent,
  postEvent,
  type Mode,
  type Started,
} from '../../support/http-events.js';
import {
  claimedInWaitWindow,
  functionFile,
  GRACE_MS,
  patchAgMetadata,
  trackingAnnotations,
} from './suite-kit.js';
import { marker, progressing, reconciling } from '../../support/conditions.js';

const { T0, kc, suite } = functionFile('force-drift');
const { startForceDrift } = suite;

afterEach(() => {
  suite.proxy.clearFaults();
});

const actionEvent = (type: string, ag: ArtifactGenerator, attempts = 0) =>
  sharedActionEvent(type, ag, attempts, T0);

const annotations = (ag: ArtifactGenerator): Record<string, string> =>
  ag.metadata?.annotations ?? {};

/** force-drift at `fd` given the force of `ag` (attempt `attempts`): the body of its answer. */
const forceBody = async (fd: Started, ag: ArtifactGenerator, attempts = 0) =>
  (await postEvent(fd.url, actionEvent(ACTION_FORCE, ag, attempts))).body;

/** Nothing was written to `ag` since this version of it (the same resourceVersion). */
const expectUnwritten = async (ag: ArtifactGenerator) =>
  expect((await getArtifactGenerator(agRefOf(ag), kc)).metadata?.resourceVersion).toBe(
    ag.metadata?.resourceVersion,
  );

describe('force-drift: force', () => {
  it.each<Mode>(['binary', 'structured'])(
    'forces a stuck AG (%s mode): claim, marker, bump; other conditions kept',
    async (mode) => {
      const clock = new SettableClock(T0 + 31_000);
      const fd = await startForceDrift(clock);
      const ag = await createAgWithStatus(kc, stuckStatus(T0));

      const answer = await postEvent(fd.url, actionEvent(ACTION_FORCE, ag), mode);

      expect(answer).toMatchObject({ status: 200, body: { result: 'forced' } });
      const after = await getArtifactGenerator(agRefOf(ag), kc);
      expect(annotations(after)[ANNOTATION_ATTEMPTS]).toBe('1');
      expect(parseTime(annotations(after)[ANNOTATION_LAST_RECOVERY_AT])).toBe(clock.now());
      expect(annotations(after)[ANNOTATION_REQUESTED_AT]).toBe(
        annotations(after)[ANNOTATION_LAST_RECOVERY_AT],
      );
      expect(readyOf(after)).toMatchObject({
        status: 'False',
        reason: REASON_FORCED,
        observedGeneration: 1,
      });
      expect(after.status?.conditions?.find((c) => c.type === 'Reconciling')).toEqual(
        reconciling(T0),
      );
      expect(after.status?.inventory).toEqual(ag.status?.inventory);
      expect(after.metadata?.generation).toBe(1);
      // One read, three writes: the protocol's whole cost.
      const calls = suite.proxy.callsMatching({
        clientTag: 'force-drift',
        name: ag.metadata?.name ?? '',
      });
      expect(calls.map((c) => `${c.verb}${c.subresource ? '/' + c.subresource : ''}`)).toEqual([
        'get',
        'patch',
        'patch/status',
        'patch',
      ]);
    },
  );

  // An AG forced `attempts` times, the last at `last` (Ready False/Forced since): force-drift at
  // `now` answers `result` and writes nothing.
  it.each([
    [
      'does nothing inside the backoff window (duplicate or late event)',
      100_000,
      1,
      90_000,
      'waiting',
    ],
    [
      "writes nothing after the last attempt (give-up is surface-stalled's)",
      300_000,
      5,
      0,
      'given-up',
    ],
  ])('%s', async (_name, now, attempts, lastOffset, result) => {
    const last = T0 + lastOffset;
    const fd = await startForceDrift(new SettableClock(T0 + now));
    const ag = await createAgWithStatus(
      kc,
      { ...stuckStatus(T0), conditions: [marker(last)] },
      { annotations: trackingAnnotations(attempts, last) },
    );
    const answer = await postEvent(fd.url, actionEvent(ACTION_FORCE, ag, attempts));
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ result });
    await expectUnwritten(ag);
  });

  it('forces the next attempt once the backoff has passed', async () => {
    const last = T0 + 60_000;
    const clock = new SettableClock(last + 30_000);
    const fd = await startForceDrift(clock);
    const ag = await createAgWithStatus(kc, stuckStatus(last + 1000), {
      annotations: trackingAnnotations(1, last),
    });
    expect(await forceBody(fd, ag, 1)).toEqual({ result: 'forced' });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(annotations(after)[ANNOTATION_ATTEMPTS]).toBe('2');
  });

  it('treats garbage tracking annotations per the codec (attempts read as 0: first force)', async () => {
    const clock = new SettableClock(T0 + 31_000);
    const fd = await startForceDrift(clock);
    const ag = await createAgWithStatus(kc, stuckStatus(T0), {
      annotations: { [ANNOTATION_ATTEMPTS]: 'many', [ANNOTATION_LAST_RECOVERY_AT]: 'yesterday' },
    });
    expect(await forceBody(fd, ag)).toEqual({ result: 'forced' });
    expect(annotations(await getArtifactGenerator(agRefOf(ag), kc))[ANNOTATION_ATTEMPTS]).toBe('1');
  });

  it('writes nothing in observe mode', async () => {
    const clock = new SettableClock(T0 + 31_000);
    const fd = await startForceDrift(clock, { env: { RECOVERY_MODE: 'observe' } });
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    expect(await forceBody(fd, ag)).toEqual({ result: 'observed' });
    await expectUnwritten(ag);
  });

  it('answers 200 for an AG that is gone', async () => {
    const fd = await startForceDrift(new SettableClock(T0));
    const ghost = {
      metadata: { namespace: 'cozy-system', name: 'no-such-ag', resourceVersion: '1' },
    };
    expect(await postEvent(fd.url, actionEvent(ACTION_FORCE, ghost))).toMatchObject({
      status: 200,
      body: { result: 'gone' },
    });
  });

  it('leaves an AG being deleted alone', async () => {
    const clock = new SettableClock(T0 + 31_000);
    const fd = await startForceDrift(clock);
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    const ref = agRefOf(ag);
    // A finalizer keeps it around after delete, with deletionTimestamp set.
    await patchAgMetadata(kc, ref, { finalizers: ['test/hold'] });
    await customObjects(kc).deleteNamespacedCustomObject({ ...AG, ...ref });
    const deleting = await getArtifactGenerator(ref, kc);
    expect(deleting.metadata?.deletionTimestamp).toBeTruthy();
    expect(await forceBody(fd, deleting)).toEqual({ result: 'deleting' });
    await expectUnwritten(deleting);
    await patchAgMetadata(kc, ref, { finalizers: null });
  });
});

describe('force-drift: concurrency and failures', () => {
  it('two instances handling the same force event at once force exactly once', async () => {
    const clock = new SettableClock(T0 + 31_000);
    const a = await startForceDrift(clock);
    const b = await startForceDrift(clock);
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    const event = actionEvent(ACTION_FORCE, ag);
    // Hold the first reads so that every request decides on the same resourceVersion: a real race.
    suite.proxy.addFault({
      match: { verb: 'get', name: ag.metadata?.name ?? '' },
      kind: 'slow',
      delayMs: 300,
      times: 6,
    });
    const answers = await Promise.all([a, b, a, b, a, b].map((s) => postEvent(s.url, event)));

    expect(answers.filter((r) => (r.body as { result: string }).result === 'forced')).toHaveLength(
      1,
    );
    // The others lost the claim; a copy that saw the claim still in flight answers 503 so that its
    // redelivery finishes the force if the claimer did not (docs/adr/0044), else 200 'waiting'.
    for (const r of answers.filter((x) => (x.body as { result: string }).result !== 'forced')) {
      expect([
        [200, 'waiting'],
        [503, 'claim-in-flight'],
      ]).toContainEqual([r.status, (r.body as { result: string }).result]);
    }
    // Their redelivery (Knative's first retries, 1 s and 2 s later) finds the force finished.
    clock.advance(3_000);
    expect(await postEvent(a.url, event)).toMatchObject({
      status: 200,
      body: { result: 'waiting' },
    });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(annotations(after)[ANNOTATION_ATTEMPTS]).toBe('1');
    expect(
      suite.proxy.count({ verb: 'patch', subresource: '', name: ag.metadata?.name ?? '' }),
    ).toBeGreaterThanOrEqual(2);
    expect(
      suite.proxy.count({ verb: 'patch', subresource: 'status', name: ag.metadata?.name ?? '' }),
    ).toBe(1);
  });

  it('re-reads and retries the marker when source-watcher wrote in between (409 on the status write)', async () => {
    const clock = new SettableClock(T0 + 31_000);
    const fd = await startForceDrift(clock);
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    suite.proxy.addFault({
      match: { verb: 'patch', subresource: 'status', name: ag.metadata?.name ?? '' },
      kind: 'status',
      status: 409,
      times: 1,
    });
    expect(await forceBody(fd, ag)).toEqual({ result: 'forced' });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(readyOf(after)?.reason).toBe(REASON_FORCED);
    expect(annotations(after)[ANNOTATION_ATTEMPTS]).toBe('1');
  });

  it('a persistently failing status write still advances the count (503), and a later resume finishes the force', async () => {
    const clock = new SettableClock(T0 + 31_000);
    const fd = await startForceDrift(clock);
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    const name = ag.metadata?.name ?? '';
    suite.proxy.addFault({
      match: { verb: 'patch', subresource: 'status', name },
      kind: 'status',
      status: 500,
    });

    expect((await postEvent(fd.url, actionEvent(ACTION_FORCE, ag))).status).toBe(503);
    const claimed = await getArtifactGenerator(agRefOf(ag), kc);
    expect(annotations(claimed)[ANNOTATION_ATTEMPTS]).toBe('1');
    expect(annotations(claimed)[ANNOTATION_REQUESTED_AT]).toBeUndefined();
    expect(readyOf(claimed)?.status).toBe('Unknown');

    // A redelivery right away must not double the force.
    suite.proxy.clearFaults();
    expect(await forceBody(fd, claimed, 1)).toEqual({ result: 'waiting' });

    // After the settle time, the interrupted force is finished, not repeated.
    clock.advance(11_000);
    expect(await forceBody(fd, claimed, 1)).toEqual({ result: 'resumed' });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(annotations(after)[ANNOTATION_ATTEMPTS]).toBe('1');
    expect(readyOf(after)?.reason).toBe(REASON_FORCED);
    expect(parseTime(annotations(after)[ANNOTATION_REQUESTED_AT])).toBe(T0 + 31_000);
  });

  it.each([
    ['500', { kind: 'status', status: 500 } as const],
    ['429', { kind: 'status', status: 429 } as const],
    ['reset', { kind: 'reset' } as const],
  ])('answers 503 when the read fails with %s, and writes nothing', async (_n, fault) => {
    const fd = await startForceDrift(new SettableClock(T0 + 31_000));
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    suite.proxy.addFault({ match: { verb: 'get', name: ag.metadata?.name ?? '' }, ...fault });
    expect((await postEvent(fd.url, actionEvent(ACTION_FORCE, ag))).status).toBe(503);
    suite.proxy.clearFaults();
    await expectUnwritten(ag);
  });
});

describe('force-drift: a force event whose claim is unfinished', () => {
  beforeEach(() => {
    suite.proxy.clearFaults();
    suite.proxy.clearCalls();
  });

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
    expect(
      await postEvent(f.url, sharedActionEvent(ACTION_FORCE, ag, asked, claimAt)),
    ).toMatchObject({
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

describe('force-drift: a requestedAt bumped by someone else during a wait window', () => {
  const claim = T0 - 30_000;
  const now = T0; // 30 s after the claim of attempt 2: inside its 60 s window, past the settle time
  const claimed = (requestedAt: number, readyNow?: ReturnType<typeof marker>) =>
    claimedInWaitWindow(kc, { stuckSince: T0 - 300_000, claim, requestedAt, readyNow });

  it.each([
    ['our marker still in place', undefined],
    ['source-watcher already Progressing', progressing(claim + 6_000)],
  ])('is not resumed (%s): force-drift writes nothing', async (_label, readyNow) => {
    const fd = await startForceDrift(new SettableClock(now));
    const { ag } = await claimed(claim + 5_000, readyNow);
    expect(await forceBody(fd, ag, 2)).toEqual({ result: 'waiting' });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.resourceVersion).toBe(ag.metadata?.resourceVersion);
    expect(after.metadata?.annotations?.[ANNOTATION_REQUESTED_AT]).toBe(
      new Date(claim + 5_000).toISOString(),
    );
    expect(readyOf(after)).toEqual(readyOf(ag));
  });

  it('an older requestedAt is still our unfinished force, and is resumed (control)', async () => {
    const fd = await startForceDrift(new SettableClock(now));
    const { ag } = await claimed(claim - 120_000);
    expect(await forceBody(fd, ag, 2)).toEqual({ result: 'resumed' });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.annotations?.[ANNOTATION_REQUESTED_AT]).toBe(formatTimeNano(claim));
    expect(after.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBe('2');
  });
});

describe('force-drift: clear tracking', () => {
  it('removes only the two tracking annotations once the AG is healthy', async () => {
    const clock = new SettableClock(T0 + 200_000);
    const fd = await startForceDrift(clock);
    const ag = await createAgWithStatus(kc, healthyStatus(T0 + 150_000), {
      annotations: {
        ...trackingAnnotations(2, T0 + 100_000),
        'example.com/keep': 'yes',
      },
    });
    expect((await postEvent(fd.url, actionEvent(ACTION_CLEAR_TRACKING, ag, 2))).body).toEqual({
      result: 'cleared',
    });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(annotations(after)).toEqual({
      [ANNOTATION_REQUESTED_AT]: formatTimeNano(T0 + 100_000),
      'example.com/keep': 'yes',
    });
  });

  it('does not clear while source-watcher is still rebuilding (Unknown with attempts > 0)', async () => {
    const clock = new SettableClock(T0 + 40_000);
    const fd = await startForceDrift(clock);
    const ag = await createAgWithStatus(kc, stuckStatus(T0 + 35_000), {
      annotations: trackingAnnotations(1, T0 + 31_000),
    });
    expect((await postEvent(fd.url, actionEvent(ACTION_CLEAR_TRACKING, ag, 1))).body).toEqual({
      result: 'waiting',
    });
    expect(annotations(await getArtifactGenerator(agRefOf(ag), kc))[ANNOTATION_ATTEMPTS]).toBe('1');
  });
});

describe('force-drift: bad input', () => {
  /** A force's data, well-formed but for `over` (a key set to undefined is left out of the JSON). */
  const forceData = (over: object) => ({
    namespace: 'cozy-system',
    resourceVersion: '1',
    attempts: 0,
    decidedAt: '2026-01-01T00:00:00Z',
    ...over,
  });

  it.each([
    ['no data', undefined],
    ['a string', 'force!'],
    ['missing name', forceData({ name: undefined })],
    ['an invalid name', forceData({ name: 'Not_A_Name' })],
    ['negative attempts', forceData({ name: 'x', attempts: -1 })],
  ])('answers 400 for %s, with no API call', async (_name, data) => {
    const fd = await startForceDrift(new SettableClock(T0));
    suite.proxy.clearCalls();
    const answer = await postEvent(fd.url, cloudEvent({ type: ACTION_FORCE, data }));
    expect(answer.status).toBe(400);
    expect(suite.proxy.count({ clientTag: 'force-drift' })).toBe(0);
  });

  it('ignores an event type it does not handle (200)', async () => {
    const fd = await startForceDrift(new SettableClock(T0));
    expect(
      await postEvent(fd.url, cloudEvent({ type: 'com.example.other', data: {} })),
    ).toMatchObject({ status: 200, body: { result: 'unknown-type' } });
  });

  it('a marker written by a status write keeps the AG status valid for the CRD schema', async () => {
    // Guard against a schema drift between our marker and the CRD (422 would make every force fail).
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    const written = await writeArtifactGeneratorStatus(
      agRefOf(ag),
      { conditions: [marker(T0)] },
      kc,
    );
    expect(readyOf(written)?.reason).toBe(REASON_FORCED);
  });
});
