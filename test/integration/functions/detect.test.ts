// detect over real HTTP against the real test API server: it decides, emits action events to a
// recording Broker stand-in, programs the follow-up alarm, and never writes AGs or PackageSources.

import { beforeEach, describe, expect, it } from 'vitest';
import {
  ACTION_CLEAR_TRACKING,
  ACTION_FORCE,
  ACTION_STALLED,
  ANNOTATION_ATTEMPTS,
  APISERVER_ADD,
  APISERVER_DELETE,
  APISERVER_REF_UPDATE,
  APISERVER_UPDATE,
  PING,
  cronFor,
} from '../../../shared/core/index.js';
import type { ArtifactGenerator } from '../../../shared/core/objects/types.js';
import { agRefOf } from '../../support/apiserver.js';
import {
  createAgWithStatus,
  deleteAllArtifactGenerators,
  healthyStatus,
  stuckStatus,
} from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import { cloudEvent, postEvent } from '../../support/http-events.js';
import { functionFile, trackingAnnotations } from './suite-kit.js';
import { resyncPing } from '../../support/http-events.js';
import {
  ALARM_NAME,
  ALARM_NAMESPACE,
  deleteAlarm,
  readAlarm,
} from '../../support/recovery-alarm.js';
import { marker, succeeded } from '../../support/conditions.js';

const { T0, kc, suite, ...file } = functionFile('detect');
const { startDetect } = suite;

beforeEach(async () => {
  suite.sink.events.length = 0;
  suite.proxy.clearFaults();
  await deleteAlarm(kc);
});

function agEvent(type: string, ag: ArtifactGenerator) {
  const ref = agRefOf(ag);
  return cloudEvent({
    type,
    source: 'https://127.0.0.1:6443',
    subject: `/apis/source.extensions.fluxcd.io/v1beta1/namespaces/${ref.namespace}/artifactgenerators/${ref.name}`,
    data: ag,
    extensions: {
      kind: 'ArtifactGenerator',
      apiversion: 'source.extensions.fluxcd.io/v1beta1',
      name: ref.name,
      namespace: ref.namespace,
    },
  });
}

describe('detect: AG events', () => {
  it('the no-op path: a healthy AG without tracking makes no API call and emits nothing', async () => {
    const clock = new SettableClock(T0 + 60_000);
    const d = await startDetect(clock);
    const ag = await createAgWithStatus(kc, healthyStatus(T0));
    suite.proxy.clearCalls();
    const answer = await postEvent(d.url, agEvent(APISERVER_UPDATE, ag));
    expect(answer).toMatchObject({ status: 200, body: { result: 'healthy' } });
    expect([...answer.headers.keys()].filter((h) => h.startsWith('ce-'))).toEqual([]);
    expect(suite.proxy.count({ clientTag: 'detect' })).toBe(0);
    expect(suite.sink.events).toHaveLength(0);
  });

  it.each([
    ['stuck past the grace period', stuckStatus(T0), {}, T0 + 31_000, ACTION_FORCE],
    [
      'healthy again with tracking left',
      healthyStatus(T0 + 100_000),
      trackingAnnotations(2, T0 + 60_000),
      T0 + 120_000,
      ACTION_CLEAR_TRACKING,
    ],
    [
      'the last window has closed',
      { ...stuckStatus(T0), conditions: [marker(T0)] },
      trackingAnnotations(5, T0),
      T0 + 241_000,
      ACTION_STALLED,
    ],
    [
      'a claimed force never finished (resume)',
      stuckStatus(T0),
      trackingAnnotations(1, T0 + 31_000, false),
      T0 + 45_000,
      ACTION_FORCE,
    ],
  ])(
    '%s: emits one action event and writes nothing to the AG',
    async (_name, status, annotations, now, type) => {
      const d = await startDetect(new SettableClock(now));
      const ag = await createAgWithStatus(kc, status, { annotations });
      suite.proxy.clearCalls();
      expect((await postEvent(d.url, agEvent(APISERVER_UPDATE, ag))).status).toBe(200);
      expect(suite.sink.events.map((e) => e.type)).toEqual([type]);
      const ref = agRefOf(ag);
      expect(suite.sink.events[0]).toMatchObject({
        source: '/source-watcher-recovery/detect',
        subject: `${ref.namespace}/${ref.name}`,
      });
      expect(suite.sink.events[0]?.data).toMatchObject({
        ...ref,
        resourceVersion: ag.metadata?.resourceVersion,
        attempts: Number(annotations[ANNOTATION_ATTEMPTS] ?? 0),
      });
      expect(
        suite.proxy.count({
          clientTag: 'detect',
          resource: 'artifactgenerators',
          verb: ['patch', 'update', 'create', 'delete'],
        }),
      ).toBe(0);
    },
  );

  it('add events are handled like updates', async () => {
    const d = await startDetect(new SettableClock(T0 + 31_000));
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    await postEvent(d.url, agEvent(APISERVER_ADD, ag));
    expect(suite.sink.events.map((e) => e.type)).toEqual([ACTION_FORCE]);
  });

  it('a Reference-mode event reads the AG first', async () => {
    const d = await startDetect(new SettableClock(T0 + 31_000));
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    const ref = agRefOf(ag);
    const event = cloudEvent({
      type: APISERVER_REF_UPDATE,
      data: {
        kind: 'ArtifactGenerator',
        apiVersion: 'source.extensions.fluxcd.io/v1beta1',
        ...ref,
      },
      extensions: { kind: 'ArtifactGenerator', name: ref.name, namespace: ref.namespace },
    });
    suite.proxy.clearCalls();
    expect((await postEvent(d.url, event)).status).toBe(200);
    expect(suite.proxy.count({ clientTag: 'detect', verb: 'get', name: ref.name })).toBe(1);
    expect(suite.sink.events.map((e) => e.type)).toEqual([ACTION_FORCE]);
  });

  it('a delete event, another kind, or an unknown type is ignored with 200', async () => {
    const d = await startDetect(new SettableClock(T0));
    const ag = await createAgWithStatus(kc, stuckStatus(T0 - 60_000));
    for (const event of [
      agEvent(APISERVER_DELETE, ag),
      cloudEvent({
        type: APISERVER_UPDATE,
        data: { kind: 'Deployment', metadata: { name: 'x', namespace: 'y' } },
        extensions: { kind: 'Deployment' },
      }),
      cloudEvent({ type: 'com.example.unrelated', data: {} }),
    ]) {
      expect((await postEvent(d.url, event)).status).toBe(200);
    }
    expect(suite.sink.events).toHaveLength(0);
  });

  it.each([
    ['no metadata', { kind: 'ArtifactGenerator' }],
    ['a number', 42],
    [
      'a name that is not a string',
      { kind: 'ArtifactGenerator', metadata: { name: 7, namespace: 'cozy-system' } },
    ],
  ])('answers 400 for an AG event with %s, and does nothing', async (_n, data) => {
    const d = await startDetect(new SettableClock(T0));
    suite.proxy.clearCalls();
    const answer = await postEvent(
      d.url,
      cloudEvent({ type: APISERVER_UPDATE, data, extensions: { kind: 'ArtifactGenerator' } }),
    );
    expect(answer.status).toBe(400);
    expect(suite.proxy.count({ clientTag: 'detect' })).toBe(0);
    expect(suite.sink.events).toHaveLength(0);
  });

  it('answers 503 when the Broker refuses the action (so it is redelivered)', async () => {
    const d = await startDetect(new SettableClock(T0 + 31_000));
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    suite.sink.failNext(500);
    expect((await postEvent(d.url, agEvent(APISERVER_UPDATE, ag))).status).toBe(503);
    expect((await postEvent(d.url, agEvent(APISERVER_UPDATE, ag))).status).toBe(200);
    expect(suite.sink.events.map((e) => e.type)).toEqual([ACTION_FORCE]);
  });

  it('mode off: a stuck AG causes nothing', async () => {
    const d = await startDetect(new SettableClock(T0 + 31_000), { env: { RECOVERY_MODE: 'off' } });
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    suite.proxy.clearCalls();
    expect((await postEvent(d.url, agEvent(APISERVER_UPDATE, ag))).status).toBe(200);
    expect(suite.sink.events).toHaveLength(0);
    expect(suite.proxy.count({ clientTag: 'detect' })).toBe(0);
  });
});

describe('detect: follow-up alarm', () => {
  it.each([
    ['grace expiry', stuckStatus(T0), {}, T0 + 10_000, T0 + 31_000],
    [
      'a backoff window (attempt 2: 60 s)',
      stuckStatus(T0 + 32_000),
      trackingAnnotations(2, T0 + 30_000),
      T0 + 40_000,
      T0 + 90_000,
    ],
    [
      'the final window (attempt 5: 4 m)',
      { ...stuckStatus(T0), conditions: [marker(T0 + 5_000)] },
      trackingAnnotations(5, T0 + 5_000),
      T0 + 60_000,
      T0 + 245_000,
    ],
  ])('arms the alarm at %s', async (_n, status, annotations, now, expectedMoment) => {
    const d = await startDetect(new SettableClock(now));
    const ag = await createAgWithStatus(kc, status, { annotations });
    await postEvent(d.url, agEvent(APISERVER_UPDATE, ag));
    const alarm = await readAlarm(kc);
    expect(alarm?.moment).toBe(expectedMoment);
    expect(alarm?.schedule).toBe(cronFor(expectedMoment));
  });

  it('a burst of 100 events due later than the armed alarm writes nothing more', async () => {
    const clock = new SettableClock(T0 + 5_000);
    const d = await startDetect(clock);
    const early = await createAgWithStatus(kc, stuckStatus(T0));
    await postEvent(d.url, agEvent(APISERVER_UPDATE, early));
    const armed = await readAlarm(kc);
    expect(armed?.moment).toBe(T0 + 31_000);
    const later = await createAgWithStatus(kc, stuckStatus(T0 + 3_000));
    suite.proxy.clearCalls();
    await Promise.all(
      Array.from({ length: 100 }, () => postEvent(d.url, agEvent(APISERVER_UPDATE, later))),
    );
    expect(
      suite.proxy.count({ resource: 'pingsources', verb: ['create', 'patch', 'delete', 'update'] }),
    ).toBe(0);
    expect((await readAlarm(kc))?.rv).toBe(armed?.rv);
  });

  it('an earlier due time moves the alarm earlier; concurrent replicas never leave it later than the earliest', async () => {
    const clock = new SettableClock(T0 + 5_000);
    const replicas = await Promise.all([
      startDetect(clock),
      startDetect(clock),
      startDetect(clock),
    ]);
    const ags = await Promise.all(
      [0, 4_000, 8_000, 12_000, 16_000, 20_000].map((offset) =>
        createAgWithStatus(kc, stuckStatus(T0 + offset)),
      ),
    );
    await Promise.all(
      ags
        .map((ag, i) => postEvent(replicas[i % 3]?.url ?? '', agEvent(APISERVER_UPDATE, ag)))
        .reverse(),
    );
    expect((await readAlarm(kc))?.moment).toBe(T0 + 31_000);
  });
});

describe('detect: sweep (resync or alarm ping)', () => {
  it('lists every AG page by page, emits what is due, and programs the alarm to the earliest due time', async () => {
    const { d } = await file.detectOnEmptyCluster(T0 + 40_000);
    const healthy = await Promise.all(
      Array.from({ length: 5 }, () => createAgWithStatus(kc, healthyStatus(T0))),
    );
    const stuck = await createAgWithStatus(kc, stuckStatus(T0));
    const pending = await createAgWithStatus(kc, stuckStatus(T0 + 30_000));
    suite.proxy.clearCalls();
    expect(await postEvent(d.url, resyncPing())).toMatchObject({
      status: 200,
      body: { result: 'swept' },
    });
    expect(suite.sink.events.map((e) => [e.type, (e.data as { name: string }).name])).toEqual([
      [ACTION_FORCE, stuck.metadata?.name],
    ]);
    const lists = suite.proxy.callsMatching({
      clientTag: 'detect',
      verb: 'list',
      resource: 'artifactgenerators',
    });
    // One page, plus one history read for the one candidate the time rule does not settle yet
    // (`pending`: outputs saved, Ready Unknown 10 s); its previous version shows no lost write.
    expect(lists.filter((c) => !c.path.includes('resourceVersionMatch=Exact'))).toHaveLength(1);
    expect(lists.filter((c) => c.path.includes('resourceVersionMatch=Exact'))).toHaveLength(1);
    expect(lists.find((c) => c.path.includes('resourceVersionMatch=Exact'))?.path).toContain(
      encodeURIComponent(`metadata.name=${pending.metadata?.name ?? ''}`),
    );
    expect((await readAlarm(kc))?.moment).toBe(T0 + 61_000);
    expect(healthy).toHaveLength(5);
    expect(pending.metadata?.name).toBeTruthy();
  });

  it('removes the alarm after it fired when nothing is due (no orphan), and keeps no alarm on an idle cluster', async () => {
    const { clock, d } = await file.detectOnEmptyCluster(T0 + 10_000);
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    await postEvent(d.url, agEvent(APISERVER_UPDATE, ag));
    expect((await readAlarm(kc))?.moment).toBe(T0 + 31_000);
    // The AG heals before the alarm fires; the alarm fires; its sweep finds nothing due.
    const { writeArtifactGeneratorStatus } = await import('../../support/apiserver.js');
    await writeArtifactGeneratorStatus(agRefOf(ag), { conditions: [succeeded(T0 + 20_000)] }, kc);
    clock.t = T0 + 31_500;
    await postEvent(
      d.url,
      cloudEvent({
        type: PING,
        source: `/apis/v1/namespaces/${ALARM_NAMESPACE}/pingsources/${ALARM_NAME}`,
        data: { purpose: 'follow-up' },
      }),
    );
    expect(await readAlarm(kc)).toBeNull();
    // The idle resync writes nothing.
    suite.proxy.clearCalls();
    await postEvent(d.url, resyncPing());
    expect(
      suite.proxy.count({ clientTag: 'detect', verb: ['create', 'patch', 'update', 'delete'] }),
    ).toBe(0);
  });

  it('over 1,200 AGs: one list call per 500', async () => {
    const { d } = await file.detectOnEmptyCluster(T0 + 60_000);
    const { createArtifactGenerator, makeArtifactGenerator } =
      await import('../../support/apiserver.js');
    const queue = Array.from({ length: 1201 }, (_, i) => i);
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (queue.pop() !== undefined)
          await createArtifactGenerator(makeArtifactGenerator({ namespace: 'sweep' }), kc);
      }),
    );
    suite.proxy.clearCalls();
    expect((await postEvent(d.url, resyncPing())).status).toBe(200);
    expect(suite.proxy.count({ clientTag: 'detect', verb: 'list' })).toBe(3);
    expect(suite.sink.events).toHaveLength(0);
    await deleteAllArtifactGenerators(kc);
  }, 120_000);
});
