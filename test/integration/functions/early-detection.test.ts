// Early detection of the lost Ready write against the real test API server: the adapter's read of
// an AG's previous version, detect turning "outputs moved while Ready stayed Unknown" into a force
// long before the time rule, force-drift honouring the signal only on the very version it was
// proved on, and honest rebuilds left alone. The AG versions are written in source-watcher's
// recorded order (test/support/ag-states.ts rebuildAg).

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
import {
  agRefOf,
  getArtifactGenerator,
  writeArtifactGeneratorStatus,
} from '../../support/apiserver.js';
import { rebuildAg } from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import { agResourceEvent, cloudEvent, postEvent } from '../../support/http-events.js';
import { functionFile, patchAgMetadata } from './suite-kit.js';
import { resyncPing } from '../../support/http-events.js';
import { deleteAlarm } from '../../support/recovery-alarm.js';

const { T0, kc, suite, ...file } = functionFile('early');
const { startDetect, startForceDrift } = suite;

// detect armed its follow-up alarm for the honest builds in progress: leave no alarm behind.
afterAll(() => deleteAlarm(kc));
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
    expect(await port().getArtifactGeneratorBefore(ref, last.metadata!.resourceVersion!)).toEqual({
      kind: 'unavailable',
      why: 'compacted',
    });
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
    expect(suite.proxy.counters({ clientTag: 'detect', resource: 'artifactgenerators' })).toEqual({
      'list artifactgenerators': 2,
    });
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
    expect(suite.proxy.count({ clientTag: 'force-drift', resource: 'artifactgenerators' })).toBe(5);
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
      (await getArtifactGenerator(agRefOf(last), kc)).metadata?.annotations?.[ANNOTATION_ATTEMPTS],
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
