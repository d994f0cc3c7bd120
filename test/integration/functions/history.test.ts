// The AG's history against the real test API server, as detect and force-drift read it
// (shared/recovery/ag-history.ts, docs/adr/0014-early-detection.md):
// - the adapter's read of an AG's previous version;
// - early detection of the lost Ready write: detect turning "outputs moved while Ready stayed
//   Unknown" into a force long before the time rule, force-drift honouring the signal only on the
//   very version it was proved on, honest rebuilds left alone;
// - a degraded API server (docs/adr/0043), through the fault-injecting proxy: a history read that
//   fails is "no signal" (the time rule decides, its follow-up is armed, and only then does the
//   answer reflect the error), the sweep's history reads have a budget, degraded detection is
//   visible, and force-drift verifies a signalled force itself;
// - the history kept by the process (docs/adr/0045-kept-history.md): a signalled force needs
//   force-drift's read of the AG, its history read and the claim in one delivery, and under a
//   storm one of them often fails. The history read starts beside the AG read, so an AG read that
//   fails does not waste it; a redelivery (after a failed AG read or a failed claim) does not read
//   the history again; a later sweep of detect does not read again the history of a revision it
//   read before. Those cases assert the AG's state and the history requests that reached the proxy.
// The AG versions are written in source-watcher's recorded order (test/support/ag-states.ts
// rebuildAg).

import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ACTION_FORCE,
  ANNOTATION_ATTEMPTS,
  ANNOTATION_REQUESTED_AT,
  APISERVER_UPDATE,
  readyOf,
  REASON_FORCED,
  SIGNAL_LOST_WRITE,
  type ActionData,
} from '../../../shared/core/index.js';
import type { ArtifactGenerator } from '../../../shared/core/objects/types.js';
import { createKubeClient } from '../../../shared/kube/client.js';
import { REPEAT_WINDOW_MS } from '../../../functions/detect/recent-actions.js';
import {
  agRefOf,
  getArtifactGenerator,
  writeArtifactGeneratorStatus,
} from '../../support/apiserver.js';
import {
  createAgWithStatus,
  deleteAllArtifactGenerators,
  rebuildAg,
  stuckStatus,
} from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import { agResourceEvent, cloudEvent, postEvent, resyncPing } from '../../support/http-events.js';
import type { CallMatch, KubeProxy, ProxyCall } from '../../support/kube-proxy.js';
import { deleteAlarm, readAlarm } from '../../support/recovery-alarm.js';
import {
  capturingLogger,
  functionFile,
  GRACE_MS,
  historyRead,
  patchAgMetadata,
} from './suite-kit.js';
import { systemClock } from '../../../shared/runtime/clock.js';

const { T0, kc, suite, ...file } = functionFile('history');
const { startDetect, startForceDrift } = suite;

// detect armed its follow-up alarm for the honest builds in progress: leave no alarm behind.
afterAll(() => deleteAlarm(kc));

describe('early detection: the lost Ready write seen in the history', () => {
  beforeEach(() => {
    suite.sink.events.length = 0;
    suite.proxy.clearFaults();
    suite.proxy.clearCalls();
  });

  function updateEvent(ag: ArtifactGenerator) {
    return agResourceEvent(ag, APISERVER_UPDATE, 'https://127.0.0.1:6443');
  }

  describe('adapter: an AG version just before another', () => {
    const port = () =>
      createKubeClient({
        clock: systemClock,
        kubeConfig: suite.proxy.kubeConfig('adapter'),
        fieldManager: 'test-adapter',
      });

    it('returns each previous version exactly, and absent before creation', async () => {
      const { versions } = await rebuildAg(kc, { at: T0, lose: true });
      const ref = agRefOf(versions[0]!);
      expect(
        await port().getArtifactGeneratorBefore(ref, versions[0]!.metadata!.resourceVersion!),
      ).toEqual({ kind: 'absent' });
      for (let i = 1; i < versions.length; i++) {
        const before = await port().getArtifactGeneratorBefore(
          ref,
          versions[i]!.metadata!.resourceVersion!,
        );
        expect(before.kind).toBe('found');
        expect(before.kind === 'found' && before.ag.metadata?.resourceVersion).toBe(
          versions[i - 1]!.metadata!.resourceVersion,
        );
        expect(before.kind === 'found' && before.ag.status).toEqual(versions[i - 1]!.status);
      }
    });

    it('ignores other AGs written in between (versions are per object)', async () => {
      const a = await rebuildAg(kc, { at: T0, lose: true });
      const other = await rebuildAg(kc, { at: T0, lose: false });
      // Another object moves the resourceVersion on; `a`'s version just before its last is still
      // its own previous write.
      const touched = await writeArtifactGeneratorStatus(
        agRefOf(a.last),
        { lastHandledReconcileAt: 'x' },
        kc,
      );
      const before = await port().getArtifactGeneratorBefore(
        agRefOf(a.last),
        touched.metadata!.resourceVersion!,
      );
      expect(before.kind === 'found' && before.ag.metadata?.resourceVersion).toBe(
        a.last.metadata?.resourceVersion,
      );
      expect(other.last.metadata?.name).not.toBe(a.last.metadata?.name);
    });

    it('answers unavailable for compacted history (410) and a resourceVersion that is no number', async () => {
      const { last } = await rebuildAg(kc, { at: T0, lose: true });
      const ref = agRefOf(last);
      expect(await port().getArtifactGeneratorBefore(ref, 'not-a-number')).toEqual({
        kind: 'unavailable',
        why: 'not-comparable',
      });
      expect(await port().getArtifactGeneratorBefore(ref, '1')).toEqual({
        kind: 'unavailable',
        why: 'not-comparable',
      });
      suite.proxy.addFault({
        kind: 'status',
        status: 410,
        match: { resource: 'artifactgenerators' },
      });
      expect(await port().getArtifactGeneratorBefore(ref, last.metadata!.resourceVersion!)).toEqual(
        {
          kind: 'unavailable',
          why: 'compacted',
        },
      );
    });

    it('refuses a bad name before any request', async () => {
      await expect(
        port().getArtifactGeneratorBefore({ namespace: 'cozy-system', name: 'Bad/Name' }, '10'),
      ).rejects.toMatchObject({ kind: 'Invalid' });
      expect(suite.proxy.count({ clientTag: 'adapter' })).toBe(0);
    });
  });

  describe('detect: the lost write itself, seconds after it happened', () => {
    it('forces a lost Ready write 1 s after the stall, with the signal, from one history read', async () => {
      const { versions, last } = await rebuildAg(kc, { at: T0, lose: true });
      const d = await startDetect(new SettableClock(T0 + 1_000));
      suite.proxy.clearCalls();
      for (const v of versions.slice(1)) {
        expect((await postEvent(d.url, updateEvent(v))).status).toBe(200);
      }
      const forces = file.forcesFor(last);
      expect(forces).toHaveLength(1);
      expect(forces[0]?.data).toMatchObject({
        resourceVersion: last.metadata?.resourceVersion,
        attempts: 0,
        signal: SIGNAL_LOST_WRITE,
      });
      // Two candidates (in progress, stuck): one history read each; nothing written to the AG.
      expect(suite.proxy.counters({ clientTag: 'detect', resource: 'artifactgenerators' })).toEqual(
        {
          'list artifactgenerators': 2,
        },
      );
    });

    it('leaves an honest rebuild alone: no force, no signal', async () => {
      const { versions, last } = await rebuildAg(kc, { at: T0, lose: false });
      const d = await startDetect(new SettableClock(T0 + 1_000));
      for (const v of versions.slice(1)) {
        expect((await postEvent(d.url, updateEvent(v))).status).toBe(200);
      }
      expect(file.forcesFor(last)).toHaveLength(0);
    });

    it('finds the signal whatever the order and number of deliveries', async () => {
      const { versions, last } = await rebuildAg(kc, { at: T0, lose: true });
      const d = await startDetect(new SettableClock(T0 + 1_000));
      const deliveries = [...versions.slice(1)].reverse().flatMap((v) => [v, v]);
      for (const v of deliveries) await postEvent(d.url, updateEvent(v));
      const forces = file.forcesFor(last);
      // The stuck version, delivered twice: its copy moments later is not repeated (ADR 47).
      expect(forces).toHaveLength(1);
      expect(new Set(forces.map((e) => (e.data as ActionData).resourceVersion))).toEqual(
        new Set([last.metadata?.resourceVersion]),
      );
    });

    it('finds it in a sweep when the event was lost', async () => {
      const { last } = await rebuildAg(kc, { at: T0, lose: true });
      const d = await startDetect(new SettableClock(T0 + 1_000));
      const ping = resyncPing({});
      expect((await postEvent(d.url, ping)).status).toBe(200);
      expect(file.forcesFor(last).map((e) => (e.data as ActionData).signal)).toEqual([
        SIGNAL_LOST_WRITE,
      ]);
    });

    it('with RECOVERY_EARLY_DETECTION=off reads no history and waits for the time rule', async () => {
      const { versions, last } = await rebuildAg(kc, { at: T0, lose: true });
      const d = await startDetect(new SettableClock(T0 + 1_000), {
        env: { RECOVERY_EARLY_DETECTION: 'off' },
      });
      suite.proxy.clearCalls();
      for (const v of versions.slice(1)) await postEvent(d.url, updateEvent(v));
      expect(file.forcesFor(last)).toHaveLength(0);
      expect(suite.proxy.count({ clientTag: 'detect', verb: 'list' })).toBe(0);
    });

    it('answers 503 (redelivery) when the history read fails transiently, and forces on redelivery', async () => {
      const { last } = await rebuildAg(kc, { at: T0, lose: true });
      const d = await startDetect(new SettableClock(T0 + 1_000));
      const fault = suite.proxy.addFault({
        kind: 'status',
        status: 503,
        times: 1,
        match: { clientTag: 'detect', verb: 'list' },
      });
      expect((await postEvent(d.url, updateEvent(last))).status).toBe(503);
      expect(fault.applied).toBe(1);
      expect(file.forcesFor(last)).toHaveLength(0);
      expect((await postEvent(d.url, updateEvent(last))).status).toBe(200);
      expect(file.forcesFor(last)).toHaveLength(1);
    });
  });

  describe('force-drift: the signal holds on the version it was proved on', () => {
    it('forces attempt 1 within the grace period when the AG is still that version', async () => {
      const { last } = await rebuildAg(kc, { at: T0, lose: true });
      await file.expectForceAnswer(last, true, 'forced');
      const ag = await getArtifactGenerator(agRefOf(last), kc);
      expect(ag.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBe('1');
      expect(ag.metadata?.annotations?.[ANNOTATION_REQUESTED_AT]).toBeDefined();
      expect(readyOf(ag)).toMatchObject({ status: 'False', reason: REASON_FORCED });
      // P5: one fresh read, the history read that verifies the signal (issue 19) and the three
      // writes, no more; plus the force's Event (issue 15).
      expect(suite.proxy.count({ clientTag: 'force-drift', resource: 'artifactgenerators' })).toBe(
        5,
      );
      expect(
        suite.proxy.count({ clientTag: 'force-drift', resource: 'events', verb: 'create' }),
      ).toBe(1);
      expect(suite.proxy.count({ clientTag: 'force-drift' })).toBe(6);
    });

    it('does nothing when the AG moved since and its own history shows no lost write (the proof is about another version)', async () => {
      const { last } = await rebuildAg(kc, { at: T0, lose: true });
      // A label edit after the lost write: the AG's version just before the one force-drift reads
      // has the same outputs, so force-drift's own check finds no signal.
      await patchAgMetadata(kc, agRefOf(last), { labels: { 'edited.example.com/by': 'someone' } });
      await file.expectForceAnswer(last, true, 'nothing-to-do');
      const ag = await getArtifactGenerator(agRefOf(last), kc);
      expect(ag.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBeUndefined();
      expect(readyOf(ag)?.status).toBe('Unknown');
    });

    it('does nothing without the signal before the grace period', async () => {
      const { last } = await rebuildAg(kc, { at: T0, lose: true });
      await file.expectForceAnswer(last, false, 'nothing-to-do');
      expect(
        (await getArtifactGenerator(agRefOf(last), kc)).metadata?.annotations?.[
          ANNOTATION_ATTEMPTS
        ],
      ).toBeUndefined();
    });

    it('refuses an unknown signal with 400 and writes nothing', async () => {
      const { last } = await rebuildAg(kc, { at: T0, lose: true });
      const f = await startForceDrift(new SettableClock(T0 + 1_000));
      suite.proxy.clearCalls();
      const bad = file.forceEvent(last, true);
      const answer = await postEvent(
        f.url,
        cloudEvent({
          type: ACTION_FORCE,
          source: bad.source,
          data: { ...(bad.data as ActionData), signal: 'trust-me' },
        }),
      );
      expect(answer.status).toBe(400);
      expect(suite.proxy.count({ clientTag: 'force-drift' })).toBe(0);
    });
  });
});

describe('a degraded API server: a history read that fails is no signal', () => {
  beforeEach(async () => {
    suite.sink.events.length = 0;
    suite.proxy.clearFaults();
    suite.proxy.clearCalls();
    await deleteAlarm(kc);
  });

  const ALARM_OWNERLESS = 'alarm owner not found; alarm written without an owner';
  describe('detect, event path: a history read that fails is "no signal", and the follow-up is armed first', () => {
    it.each<[string, Parameters<KubeProxy['addFault']>[0]['kind'], number | undefined, number]>([
      ['410 (compacted)', 'status', 410, 200],
      ['404 (no history, never "AG gone")', 'status', 404, 200],
      ['403 (RBAC)', 'status', 403, 200],
      ['422 (exact reads refused)', 'status', 422, 200],
      ['429 (API Priority and Fairness)', 'status', 429, 503],
      ['500 (etcdserver: request timed out)', 'status', 500, 503],
      ['a timeout', 'timeout', undefined, 503],
    ])(
      '%s (fault %s %s): answers %d, no force, the time rule armed',
      async (_label, kind, status, answer) => {
        const { last } = await rebuildAg(kc, { at: T0, lose: true });
        const d = await startDetect(new SettableClock(T0 + 1_000));
        const fault =
          kind === 'status' && status !== undefined
            ? suite.proxy.addFault({ kind, status, match: historyRead('detect') })
            : suite.proxy.addFault({ kind: 'timeout', match: historyRead('detect') });
        const res = await postEvent(d.url, agResourceEvent(last, APISERVER_UPDATE));
        expect(fault.applied).toBe(1);
        expect({ status: res.status, result: (res.body as { result?: string }).result }).toEqual({
          status: answer,
          result: answer === 200 ? 'healthy' : 'history',
        });
        expect(file.forcesFor(last)).toHaveLength(0);
        // Ready Unknown since T0: the time rule's follow-up, 1 ms after the grace, in whole seconds.
        expect((await readAlarm(kc))?.moment).toBe(T0 + GRACE_MS + 1_000);
      },
    );

    it('a transient failure: the redelivery that reads the history forces at once', async () => {
      const { last } = await rebuildAg(kc, { at: T0, lose: true });
      const d = await startDetect(new SettableClock(T0 + 1_000));
      suite.proxy.addFault({ kind: 'status', status: 429, times: 1, match: historyRead('detect') });
      expect((await postEvent(d.url, agResourceEvent(last, APISERVER_UPDATE))).status).toBe(503);
      expect((await postEvent(d.url, agResourceEvent(last, APISERVER_UPDATE))).status).toBe(200);
      expect(file.forcesFor(last).map((e) => (e.data as ActionData).signal)).toEqual([
        SIGNAL_LOST_WRITE,
      ]);
    });

    it('warns once per process and cause, then logs at debug', async () => {
      const { logger, logs } = capturingLogger('detect');
      const d = await startDetect(new SettableClock(T0 + 1_000), { logger });
      const ags = await Promise.all(
        [0, 1, 2, 3].map(() => rebuildAg(kc, { at: T0, lose: true }).then((b) => b.last)),
      );
      const forbidden = suite.proxy.addFault({
        kind: 'status',
        status: 403,
        times: 3,
        match: historyRead('detect'),
      });
      for (const ag of ags.slice(0, 3))
        await postEvent(d.url, agResourceEvent(ag, APISERVER_UPDATE));
      expect(forbidden.applied).toBe(3);
      suite.proxy.addFault({ kind: 'status', status: 410, times: 1, match: historyRead('detect') });
      await postEvent(d.url, agResourceEvent(ags[3]!, APISERVER_UPDATE));
      const gaps = (level: string) =>
        logs.records.filter((l) => l.level === level && l.gap !== undefined).map((l) => l.gap);
      expect(gaps('warn')).toEqual(['forbidden', 'compacted']);
      expect(gaps('debug')).toEqual(['forbidden', 'forbidden']);
      // This cluster has no resync PingSource, so the alarm is written without its owner and
      // detect says so once (docs/adr/0067); every other warning is the degraded detection's.
      expect(
        logs.records
          .filter((l) => l.level === 'warn' && l.msg !== ALARM_OWNERLESS)
          .every((l) => l.msg.startsWith('early detection degraded')),
      ).toBe(true);
      expect(logs.records.filter((l) => l.msg === ALARM_OWNERLESS)).toHaveLength(1);
    });
  });

  describe('detect, sweep: history reads have a budget', () => {
    it('after the first transient failure the rest of the sweep skips history; every AG is still evaluated', async () => {
      const { d } = await file.detectOnEmptyCluster(T0 + 40_000);
      // Three candidates inside the grace period (Ready Unknown for 10 s, outputs saved), and one
      // that the time rule calls stuck.
      const pending = await Promise.all(
        [0, 1, 2].map(() => createAgWithStatus(kc, stuckStatus(T0 + 30_000))),
      );
      const stuck = await createAgWithStatus(kc, stuckStatus(T0));
      const fault = suite.proxy.addFault({
        kind: 'status',
        status: 500,
        match: historyRead('detect'),
      });
      expect(await postEvent(d.url, resyncPing())).toMatchObject({
        status: 200,
        body: { result: 'swept' },
      });
      // The first history read and its in-place retry (ADR 70); none after.
      expect(fault.applied).toBe(2);
      expect(suite.proxy.count(historyRead('detect'))).toBe(2);
      expect(file.forcesFor(stuck)).toHaveLength(1);
      expect((await readAlarm(kc))?.moment).toBe(T0 + 61_000);
      expect(pending).toHaveLength(3);
    });

    it('ends inside its budget when the API server is slow: no emit after it, the alarm armed for what it saw, 503 for a redelivery', async () => {
      await deleteAllArtifactGenerators(kc);
      const wall0 = Date.now();
      const clock = new SettableClock(T0 + 40_000);
      clock.now = () => T0 + 40_000 + (Date.now() - wall0);
      // The budget runs on the monotonic clock (ADR 57): real time here too.
      clock.monotonicMs = () => Date.now() - wall0;
      const d = await startDetect(clock, { env: { SWEEP_BUDGET_MS: '300' } });
      await createAgWithStatus(kc, stuckStatus(T0 + 30_000));
      const stuck = await createAgWithStatus(kc, stuckStatus(T0));
      // Every list answers after 600 ms, past the 300 ms budget.
      suite.proxy.addFault({
        kind: 'slow',
        delayMs: 600,
        match: { clientTag: 'detect', verb: 'list' },
      });
      const started = Date.now();
      const res = await postEvent(d.url, resyncPing());
      const tookMs = Date.now() - started;
      expect(res).toMatchObject({ status: 503, body: { result: 'sweep-budget' } });
      expect(file.forcesFor(stuck)).toHaveLength(0);
      // No history read was started after the page (a fifth of the budget had passed).
      expect(suite.proxy.count(historyRead('detect'))).toBe(0);
      expect((await readAlarm(kc))?.moment).toBe(T0 + 61_000);
      // One page (600 ms) and the alarm's read and write; the bound is budget + one call + alarm.
      expect(tookMs).toBeLessThan(300 + 600 + 5_000);
    });
  });

  describe('force-drift: verifies a signalled force with its own history read', () => {
    it('a forged signal on an honest build in progress gets the time rule: nothing written', async () => {
      const { versions } = await rebuildAg(kc, { at: T0, lose: false });
      // The in-progress version (Ready Unknown, old outputs): an honest build, inside the grace.
      const inProgress = versions[2]!;
      const { createArtifactGenerator, makeArtifactGenerator, writeArtifactGeneratorStatus } =
        await import('../../support/apiserver.js');
      const honest = await createArtifactGenerator(makeArtifactGenerator(), kc);
      const building = await writeArtifactGeneratorStatus(
        agRefOf(honest),
        inProgress.status ?? {},
        kc,
      );
      await file.expectForceAnswer(building, true, 'nothing-to-do');
      const after = await getArtifactGenerator(agRefOf(building), kc);
      expect(after.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBeUndefined();
      expect(readyOf(after)?.status).toBe('Unknown');
      expect(after.metadata?.resourceVersion).toBe(building.metadata?.resourceVersion);
      // One fresh read and one history read; no write.
      expect(suite.proxy.counters({ clientTag: 'force-drift' })).toEqual({
        'get artifactgenerators': 1,
        'list artifactgenerators': 1,
      });
    });

    it('a true signal forces: one history read more than a time-rule force (P5)', async () => {
      const { last } = await rebuildAg(kc, { at: T0, lose: true });
      await file.expectForceAnswer(last, true, 'forced');
      expect(suite.proxy.count({ clientTag: 'force-drift', resource: 'artifactgenerators' })).toBe(
        5,
      );
      expect(
        (await getArtifactGenerator(agRefOf(last), kc)).metadata?.annotations?.[
          ANNOTATION_ATTEMPTS
        ],
      ).toBe('1');
    });

    it.each<[string, number, number, string]>([
      ['a transient failure (500): 503 for a redelivery', 500, 503, 'history'],
      ['403: the time rule decides, 200', 403, 200, 'nothing-to-do'],
      ['410: the time rule decides, 200', 410, 200, 'nothing-to-do'],
    ])('%s; nothing written', async (_label, status, answer, result) => {
      const { last } = await rebuildAg(kc, { at: T0, lose: true });
      const f = await startForceDrift(new SettableClock(T0 + 1_000));
      suite.proxy.addFault({ kind: 'status', status, match: historyRead('force-drift') });
      expect(await postEvent(f.url, file.forceEvent(last, true))).toMatchObject({
        status: answer,
        body: { result },
      });
      const after = await getArtifactGenerator(agRefOf(last), kc);
      expect(after.metadata?.resourceVersion).toBe(last.metadata?.resourceVersion);
    });
  });
});

describe('the history kept by the process', () => {
  /** Inside testConfig's 30 s grace: only the verified lost-write signal opens the gate. */
  const INSIDE_GRACE = T0 + 5_000;

  beforeEach(() => {
    suite.proxy.clearFaults();
    suite.proxy.clearCalls();
  });

  /** History reads of this one AG by `clientTag`: a LIST by name at an exact revision. */
  function historyReads(clientTag: string, ag: ArtifactGenerator): ProxyCall[] {
    const name = encodeURIComponent(`metadata.name=${ag.metadata?.name ?? ''}`);
    return suite.proxy.callsMatching(historyRead(clientTag)).filter((c) => c.path.includes(name));
  }

  /** detect's signalled force of `ag`, decided inside the grace. */
  const signalledForce = (ag: ArtifactGenerator) => file.forceEvent(ag, true, INSIDE_GRACE);

  /** force-drift's `verb` of the AG itself (its read, its claim). */
  const forceDriftOnAg = (verb: 'get' | 'patch'): CallMatch => ({
    clientTag: 'force-drift',
    verb,
    resource: 'artifactgenerators',
    subresource: '',
  });
  describe('force-drift: a signalled force redelivered after a failed call', () => {
    it.each<[string, CallMatch]>([
      ['its read of the AG failed (500)', forceDriftOnAg('get')],
      ['its claim failed (500)', forceDriftOnAg('patch')],
    ])(
      '%s: 503 with the history read beside it, then the redelivery forces without reading it again',
      async (_label, failing) => {
        const { last: ag } = await rebuildAg(kc, { at: T0, lose: true });
        const f = await suite.startForceDrift(new SettableClock(INSIDE_GRACE));
        // Twice: once, the call is sent again in place (ADR 71: a read, a preconditioned claim).
        suite.proxy.addFault({ kind: 'status', status: 500, times: 2, match: failing });
        const event = signalledForce(ag);
        expect((await postEvent(f.url, event)).status).toBe(503);
        // The history was read in the first delivery, beside the AG read (it may answer after 503).
        await expect
          .poll(() => historyReads('force-drift', ag).some((c) => c.status !== undefined), {
            timeout: 5_000,
          })
          .toBe(true);
        expect(historyReads('force-drift', ag)).toHaveLength(1);
        expect((await getArtifactGenerator(agRefOf(ag), kc)).metadata?.resourceVersion).toBe(
          ag.metadata?.resourceVersion,
        );
        expect(await postEvent(f.url, event)).toMatchObject({
          status: 200,
          body: { result: 'forced' },
        });
        const after = await getArtifactGenerator(agRefOf(ag), kc);
        expect(after.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBe('1');
        expect(readyOf(after)?.reason).toBe(REASON_FORCED);
        expect(historyReads('force-drift', ag)).toHaveLength(1);
      },
    );

    it('a history read that failed is not kept: the redelivery reads it again and forces', async () => {
      const { last: ag } = await rebuildAg(kc, { at: T0, lose: true });
      const f = await suite.startForceDrift(new SettableClock(INSIDE_GRACE));
      // Twice: once, it is read again in place beside the AG read (ADR 71).
      suite.proxy.addFault({
        kind: 'status',
        status: 500,
        times: 2,
        match: historyRead('force-drift'),
      });
      const event = signalledForce(ag);
      expect(await postEvent(f.url, event)).toMatchObject({
        status: 503,
        body: { result: 'history' },
      });
      expect(historyReads('force-drift', ag).map((c) => c.status)).toEqual([500, 500]);
      expect(await postEvent(f.url, event)).toMatchObject({
        status: 200,
        body: { result: 'forced' },
      });
      expect(historyReads('force-drift', ag).map((c) => c.status)).toEqual([500, 500, 200]);
    });
  });

  describe("detect: the sweep's history reads", () => {
    it('a second sweep reads no history for a revision the first sweep read, and emits the same signalled force', async () => {
      const { last: ag } = await rebuildAg(kc, { at: T0, lose: true });
      const clock = new SettableClock(INSIDE_GRACE);
      const d = await suite.startDetect(clock);
      const forcesOfAg = () =>
        file.forcesFor(ag).filter((e) => (e.data as ActionData).signal === SIGNAL_LOST_WRITE)
          .length;
      suite.sink.events.length = 0;
      expect((await postEvent(d.url, resyncPing())).status).toBe(200);
      expect(historyReads('detect', ag)).toHaveLength(1);
      expect(forcesOfAg()).toBe(1);
      // Past the window in which a repeated action is not emitted again (ADR 47), still in the grace.
      clock.t = INSIDE_GRACE + REPEAT_WINDOW_MS;
      expect((await postEvent(d.url, resyncPing())).status).toBe(200);
      expect(historyReads('detect', ag)).toHaveLength(1);
      expect(forcesOfAg()).toBe(2);
    });
  });
});
