// Early detection under a degraded API server (issue 19), against the real test API server through
// the fault-injecting proxy: a history read that fails is "no signal" (the time rule decides, its
// follow-up is armed, and only then does the answer reflect the error), the sweep's history reads
// have a budget, degraded detection is visible, and force-drift verifies a signalled force itself.

import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ANNOTATION_ATTEMPTS,
  APISERVER_UPDATE,
  SIGNAL_LOST_WRITE,
  readyOf,
  type ActionData,
} from '../../../shared/core/index.js';
import { agRefOf, getArtifactGenerator } from '../../support/apiserver.js';
import {
  createAgWithStatus,
  deleteAllArtifactGenerators,
  rebuildAg,
  stuckStatus,
} from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import { agResourceEvent, postEvent } from '../../support/http-events.js';
import type { KubeProxy } from '../../support/kube-proxy.js';
import { capturingLogger, functionFile, historyRead } from './suite-kit.js';
import { resyncPing } from '../../support/http-events.js';
import { deleteAlarm, readAlarm } from '../../support/recovery-alarm.js';

const { T0, kc, suite, ...file } = functionFile('degraded');
const GRACE_MS = 30_000; // testConfig's time rule
const { startDetect, startForceDrift } = suite;

afterAll(() => deleteAlarm(kc));
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
    for (const ag of ags.slice(0, 3)) await postEvent(d.url, agResourceEvent(ag, APISERVER_UPDATE));
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
    expect(fault.applied).toBe(1);
    expect(suite.proxy.count(historyRead('detect'))).toBe(1);
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
    expect(suite.proxy.count({ clientTag: 'force-drift', resource: 'artifactgenerators' })).toBe(5);
    expect(
      (await getArtifactGenerator(agRefOf(last), kc)).metadata?.annotations?.[ANNOTATION_ATTEMPTS],
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
