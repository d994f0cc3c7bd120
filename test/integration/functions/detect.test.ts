// detect over real HTTP against the real test API server: it decides, emits action events to a
// recording Broker stand-in, programs the follow-up alarm, and never writes AGs or PackageSources.
// - AG events: what each state asks for; an action emitted moments ago is not emitted again
//   (docs/adr/0047: the same stuck AG event delivered again, as the Broker does after a 503 whose
//   emit had already happened, or a sweep redelivered, sends one force while the first copy's own
//   retries are due; past REPEAT_WINDOW_MS it sends a fresh copy); a requestedAt bumped by someone
//   else during a wait window is no unfinished force of ours (docs/adr/0021).
// - The follow-up alarm (docs/adr/0009): armed, moved, written by a slow API server so late that
//   the PingSource adapter might miss its moment (moved out again, docs/adr/0044); owned by the
//   install (docs/adr/0067: an ownerReference to the resync PingSource, its uid read from the
//   real API server, and the install's labels, so the real garbage collector removes it when the
//   install is deleted; without a readable owner it is still armed, one warn line says why, and a
//   later write adopts it); every "follow-up not armed" covered (docs/adr/0061: a transient
//   failure answers 503 and says `coveredBy: redelivery`, a refusal answers 200 and says
//   `coveredBy: resync`; the resync's sweep covers it within its period).
// - The sweep (resync or alarm ping), and the redelivery of an incomplete sweep, which lists only
//   the pages it had not done; an expired continue token (410) starts over from the first page
//   (docs/adr/0057).
// Asserted on the events the Broker (the suite's sink) received, the alarm and the proxy's record.

import type { KubeConfig } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ACTION_CLEAR_TRACKING,
  ACTION_FORCE,
  ACTION_STALLED,
  ALARM_LABELS,
  ALARM_MARGIN_MS,
  ANNOTATION_ATTEMPTS,
  APISERVER_ADD,
  APISERVER_DELETE,
  APISERVER_REF_UPDATE,
  APISERVER_UPDATE,
  PING,
  PING_KIND,
  cronFor,
  formatTimeNano,
  type ActionData,
} from '../../../shared/core/index.js';
import type { ArtifactGenerator } from '../../../shared/core/objects/types.js';
import { REPEAT_WINDOW_MS } from '../../../functions/detect/recent-actions.js';
import { agRefOf, customObjects } from '../../support/apiserver.js';
import {
  createAgWithStatus,
  deleteAllArtifactGenerators,
  healthyStatus,
  rebuildAg,
  stuckStatus,
} from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import { agResourceEvent, cloudEvent, postEvent, resyncPing } from '../../support/http-events.js';
import type { CallMatch, FaultHandle, ProxyCall } from '../../support/kube-proxy.js';
import { findObject, renderKustomize, type K8sObject } from '../../support/manifests.js';
import {
  capturingLogger,
  claimedInWaitWindow,
  functionFile,
  GRACE_MS,
  ownedPairWith,
  trackingAnnotations,
} from './suite-kit.js';
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

describe('detect: an action emitted moments ago is not emitted again', () => {
  /** Inside testConfig's 30 s grace: the force comes from the lost-write signal. */
  const AT = T0 + 2_000;

  it.each<[string, 'AG event' | 'sweep', number, number]>([
    ['the same AG event again at once: one force', 'AG event', 0, 1],
    [
      'the same AG event again just inside the window: one force',
      'AG event',
      REPEAT_WINDOW_MS - 1,
      1,
    ],
    [
      'the same AG event again at the end of the window: a fresh copy',
      'AG event',
      REPEAT_WINDOW_MS,
      2,
    ],
    ['a sweep redelivered at once: one force', 'sweep', 0, 1],
    ['a sweep again after the window: a fresh copy', 'sweep', REPEAT_WINDOW_MS, 2],
  ])('%s', async (_label, via, laterMs, forces) => {
    const { last } = await rebuildAg(kc, { at: T0, lose: true });
    const clock = new SettableClock(AT);
    const d = await suite.startDetect(clock);
    const deliver = () =>
      postEvent(d.url, via === 'AG event' ? agResourceEvent(last) : resyncPing());
    expect((await deliver()).status).toBe(200);
    clock.t = AT + laterMs;
    expect((await deliver()).status).toBe(200);
    expect(file.forcesFor(last)).toHaveLength(forces);
  });

  it('another AG moments later is not a repeat: each gets its force', async () => {
    const a = (await rebuildAg(kc, { at: T0, lose: true })).last;
    const b = (await rebuildAg(kc, { at: T0, lose: true })).last;
    const d = await suite.startDetect(new SettableClock(AT));
    for (const ag of [a, b]) expect((await postEvent(d.url, agResourceEvent(ag))).status).toBe(200);
    expect([file.forcesFor(a).length, file.forcesFor(b).length]).toEqual([1, 1]);
  });
});

describe('detect: a requestedAt bumped by someone else during a wait window', () => {
  const claim = T0 - 30_000;
  const now = T0; // 30 s after the claim of attempt 2: inside its 60 s window, past the settle time

  it('detect emits no force for it', async () => {
    suite.sink.events.length = 0;
    const d = await startDetect(new SettableClock(now));
    const { ag } = await claimedInWaitWindow(kc, {
      stuckSince: T0 - 300_000,
      claim,
      requestedAt: claim + 5_000,
    });
    expect((await postEvent(d.url, agResourceEvent(ag))).status).toBe(200);
    expect(suite.sink.events.filter((e) => e.type === ACTION_FORCE)).toEqual([]);
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

  it('20 concurrent events in one replica, all due before the alarm: the alarm is written once, read once', async () => {
    const d = await startDetect(new SettableClock(T0 + 5_000));
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    suite.proxy.clearCalls();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => postEvent(d.url, agEvent(APISERVER_UPDATE, ag))),
    );
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 20 }, () => 200));
    expect((await readAlarm(kc))?.moment).toBe(T0 + 31_000);
    // One delivery writes; the others wait for that write, which covers their due time.
    const alarmCalls = (verb: string[]) =>
      suite.proxy.calls.filter(
        (c) =>
          c.resource === 'pingsources' &&
          // A create names no object in its path.
          (c.name === ALARM_NAME || c.verb === 'create') &&
          verb.includes(c.verb),
      ).length;
    expect(alarmCalls(['create', 'patch', 'update', 'delete'])).toBe(1);
    expect(alarmCalls(['get'])).toBe(1);
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

describe("detect: the follow-up alarm's write", () => {
  beforeEach(() => {
    suite.proxy.clearFaults();
    suite.proxy.clearCalls();
  });

  it.each<[string, number, 'moved out' | 'kept']>([
    ['completes in time: the moment is kept', 0, 'kept'],
    ['completes after its moment (held by a slow API server): moved out again', 5_000, 'moved out'],
  ])('%s', async (_label, clockJumpMs, want) => {
    await deleteAlarm(kc);
    const now = T0 + 10_000;
    const clock = new SettableClock(now);
    const d = await suite.startDetect(clock);
    // Young enough that its grace ends 1 s from now: the alarm is armed at the margin.
    const { ag } = await ownedPairWith(kc, stuckStatus(now + 1_000 - GRACE_MS - 1));
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

describe("detect: the follow-up alarm's owner", () => {
  const PINGSOURCES = {
    group: 'sources.knative.dev',
    version: 'v1',
    plural: 'pingsources',
  } as const;
  const OWNER_NOT_FOUND = 'alarm owner not found; alarm written without an owner';
  const OWNER_UNREADABLE = 'alarm owner unreadable; alarm written without an owner';

  interface RawPingSource {
    metadata: {
      uid: string;
      labels?: Record<string, string>;
      ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
    };
  }

  /** The resync PingSource as the install renders it (knative/), the owner of the alarm. */
  const RESYNC = findObject(renderKustomize('knative'), 'PingSource', 'resync');

  const ps = (name: string) => ({ ...PINGSOURCES, namespace: ALARM_NAMESPACE, name });

  async function readRaw(name: string): Promise<RawPingSource | null> {
    try {
      return (await customObjects(kc).getNamespacedCustomObject(ps(name))) as RawPingSource;
    } catch (e) {
      if ((e as { code?: number }).code === 404) return null;
      throw e;
    }
  }

  /** Applies the rendered resync PingSource (as `kubectl apply -k` would); returns its uid. */
  async function applyResync(): Promise<string> {
    const body: K8sObject = { ...RESYNC, metadata: { ...RESYNC.metadata } };
    const created = (await customObjects(kc).createNamespacedCustomObject({
      ...PINGSOURCES,
      namespace: ALARM_NAMESPACE,
      body,
    })) as RawPingSource;
    return created.metadata.uid;
  }

  /** Deletes the resync PingSource as `kubectl delete -k` does (background propagation). */
  async function deleteResync(client: KubeConfig = kc): Promise<void> {
    await customObjects(client)
      .deleteNamespacedCustomObject({ ...ps('resync'), propagationPolicy: 'Background' })
      .catch((e: unknown) => {
        if ((e as { code?: number }).code !== 404) throw e;
      });
  }

  async function until(what: string, timeoutMs: number, probe: () => Promise<boolean>) {
    const deadline = Date.now() + timeoutMs;
    while (!(await probe())) {
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** detect, its clock 10 s after T0, arms the alarm for an AG stuck since `since`. */
  async function armFor(
    since: number,
    logger = capturingLogger('detect'),
    env: Record<string, string> = {},
  ) {
    const d = await suite.startDetect(new SettableClock(T0 + 10_000), {
      logger: logger.logger,
      env,
    });
    const ag = await createAgWithStatus(kc, stuckStatus(since));
    expect((await postEvent(d.url, agResourceEvent(ag))).status).toBe(200);
    return { logs: logger.logs, d };
  }

  beforeEach(async () => {
    suite.proxy.clearFaults();
    suite.proxy.clearCalls();
    await deleteAlarm(kc);
    await deleteResync();
    await until('no resync PingSource', 30_000, async () => (await readRaw('resync')) === null);
  });
  afterEach(async () => {
    suite.proxy.clearFaults();
    await deleteAlarm(kc);
    await deleteResync();
  });

  describe('the alarm belongs to the install', () => {
    it('is owned by the resync PingSource (uid from the API server) and carries the install labels', async () => {
      const uid = await applyResync();
      await armFor(T0);
      const alarm = await readRaw(ALARM_NAME);
      expect(alarm?.metadata.ownerReferences).toEqual([
        { apiVersion: 'sources.knative.dev/v1', kind: PING_KIND, name: 'resync', uid },
      ]);
      expect(alarm?.metadata.labels).toMatchObject(ALARM_LABELS);
      // The install's own label, as kustomize gives every object of knative/.
      expect(alarm?.metadata.labels?.['app.kubernetes.io/part-of']).toBe(
        RESYNC.metadata.labels?.['app.kubernetes.io/part-of'],
      );
    });

    it('the garbage collector removes the alarm when the install is deleted (kubectl delete -k)', async () => {
      await applyResync();
      await armFor(T0);
      expect(await readRaw(ALARM_NAME)).not.toBeNull();
      await deleteResync();
      // Nobody but kube-controller-manager's garbage collector deletes it.
      await until('the garbage collector removes the alarm', 60_000, async () => {
        return (await readRaw(ALARM_NAME)) === null;
      });
      expect(suite.proxy.count({ resource: 'pingsources', verb: 'delete', name: ALARM_NAME })).toBe(
        0,
      );
    });
  });

  describe('without a readable owner the alarm is still armed', () => {
    it('owner absent: armed without an owner, said once; adopted by a later write', async () => {
      const { logs, d } = await armFor(T0);
      const first = await readRaw(ALARM_NAME);
      expect(first).not.toBeNull();
      expect(first?.metadata.ownerReferences ?? []).toEqual([]);
      expect(first?.metadata.labels).toMatchObject(ALARM_LABELS);
      // An earlier due time moves the alarm: the same cause is not warned again (at debug).
      const again = await createAgWithStatus(kc, stuckStatus(T0 - 5_000));
      await postEvent(d.url, agResourceEvent(again));
      const warned = logs.records.filter((r) => r.msg === OWNER_NOT_FOUND);
      expect(warned.map((r) => r.level)).toEqual(['warn', 'debug']);
      expect(warned[0]).toMatchObject({ owner: `${ALARM_NAMESPACE}/resync`, error: 'NotFound' });
      // The install is applied again: the next write adopts the alarm.
      const uid = await applyResync();
      const earlier = await createAgWithStatus(kc, stuckStatus(T0 - 10_000));
      await postEvent(d.url, agResourceEvent(earlier));
      expect((await readRaw(ALARM_NAME))?.metadata.ownerReferences?.map((r) => r.uid)).toEqual([
        uid,
      ]);
    });

    it.each([
      // KUBE_REQUEST_TIMEOUT_MS 1 s: the held read times out at the client.
      ['a timeout', { kind: 'timeout' } as const],
      ['503', { kind: 'status', status: 503 } as const],
      ['403', { kind: 'status', status: 403 } as const],
    ])('owner read fails (%s): armed without an owner, one warn line', async (_n, fault) => {
      await applyResync();
      suite.proxy.addFault({
        ...fault,
        match: { clientTag: 'detect', resource: 'pingsources', verb: 'get', name: 'resync' },
      });
      const { logs } = await armFor(T0, capturingLogger('detect'), {
        KUBE_REQUEST_TIMEOUT_MS: '1000',
      });
      const alarm = await readRaw(ALARM_NAME);
      expect(alarm).not.toBeNull();
      expect(alarm?.metadata.ownerReferences ?? []).toEqual([]);
      const warned = logs.records.filter((r) => r.msg === OWNER_UNREADABLE);
      expect(warned).toHaveLength(1);
      expect(warned[0]?.level).toBe('warn');
    });
  });
});

describe('detect: a follow-up not armed: what covers it', () => {
  /** An AG stuck since T0 is due just past the suite's 30 s grace, its alarm on the next second. */
  const DUE = T0 + 30_001;
  const ALARM_AT = T0 + 31_000;

  /** Every write of the alarm PingSource by detect answered `status`. */
  const alarmWritesFail = (status: number): FaultHandle =>
    suite.proxy.addFault({
      kind: 'status',
      status,
      match: { clientTag: 'detect', resource: 'pingsources', verb: ['create', 'patch', 'delete'] },
    });

  /** detect on an empty cluster at T0 + 10 s, and an AG stuck since T0 (due at DUE). */
  async function stuckAgSeenByDetect() {
    const cap = capturingLogger('detect', 'info');
    await deleteAllArtifactGenerators(kc);
    const clock = new SettableClock(T0 + 10_000);
    const d = await suite.startDetect(clock, { logger: cap.logger });
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    return { clock, d, ag, logs: cap.logs };
  }

  const forcesOf = (name: string | undefined) =>
    suite.sink.events.filter(
      (e) => e.type === ACTION_FORCE && (e.data as ActionData).name === name,
    );

  it.each([
    [500, 503, 'follow-up', 'redelivery'],
    [429, 503, 'follow-up', 'redelivery'],
    [403, 200, 'healthy', 'resync'],
  ])(
    'the alarm write answered %i: %i %s, coveredBy %s, with the due time',
    async (status, code, result, coveredBy) => {
      const { d, ag, logs } = await stuckAgSeenByDetect();
      const fault = alarmWritesFail(status);
      try {
        const answer = await postEvent(d.url, agResourceEvent(ag));
        expect(answer).toMatchObject({ status: code, body: { result } });
      } finally {
        fault.remove();
      }
      expect(fault.applied).toBeGreaterThan(0);
      expect(await readAlarm(kc)).toBeNull();
      expect(logs.find('follow-up not armed')).toEqual([
        expect.objectContaining({ level: 'warn', coveredBy, due: formatTimeNano(DUE) }),
      ]);
    },
  );

  it('the redelivery arms it once the API server answers', async () => {
    const { clock, d, ag } = await stuckAgSeenByDetect();
    const event = agResourceEvent(ag);
    const fault = alarmWritesFail(500);
    expect((await postEvent(d.url, event)).status).toBe(503);
    fault.remove();
    clock.advance(1000);
    expect((await postEvent(d.url, event)).status).toBe(200);
    expect((await readAlarm(kc))?.moment).toBe(ALARM_AT);
  });

  it('the resync before the due time arms the alarm for it', async () => {
    const { clock, d, ag } = await stuckAgSeenByDetect();
    const fault = alarmWritesFail(403);
    expect((await postEvent(d.url, agResourceEvent(ag))).status).toBe(200);
    fault.remove();
    clock.advance(5_000);
    expect(await postEvent(d.url, resyncPing())).toMatchObject({
      status: 200,
      body: { result: 'swept' },
    });
    expect((await readAlarm(kc))?.moment).toBe(ALARM_AT);
    expect(forcesOf(ag.metadata?.name)).toEqual([]);
  });

  it('the resync after the due time emits the force, the alarm still unwritable', async () => {
    const { clock, d, ag, logs } = await stuckAgSeenByDetect();
    // Another AG, due later: the sweep has an alarm to settle.
    await createAgWithStatus(kc, stuckStatus(T0 + 20_000));
    const fault = alarmWritesFail(500);
    try {
      expect((await postEvent(d.url, agResourceEvent(ag))).status).toBe(503);
      clock.advance(DUE - clock.now() + 1_000);
      // The sweep emits what is due first; settling the alarm fails, and the ping is redelivered.
      expect(await postEvent(d.url, resyncPing())).toMatchObject({
        status: 503,
        body: { result: 'kube-transient' },
      });
    } finally {
      fault.remove();
    }
    expect(forcesOf(ag.metadata?.name)).toHaveLength(1);
    expect(logs.find('follow-up not armed').map((l) => l.coveredBy)).toEqual([
      'redelivery',
      'redelivery',
    ]);
    expect(logs.find('sweep done; alarm not settled')).toHaveLength(1);
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

describe("detect: an incomplete sweep's redelivery resumes after the pages it has done", () => {
  beforeEach(() => {
    suite.proxy.clearFaults();
    suite.proxy.clearCalls();
  });

  const lists: CallMatch = { clientTag: 'detect', verb: 'list', resource: 'artifactgenerators' };
  /** The `n`th list with a continue token from now on (1-based). */
  const nthContinued = (n: number): CallMatch => {
    let seen = 0;
    return {
      ...lists,
      where: (c) => (c as ProxyCall).path.includes('continue=') && ++seen === n,
    };
  };
  /** Every list with a continue token from the `n`th on (1-based). */
  const fromNthContinued = (n: number): CallMatch => {
    let seen = 0;
    return {
      ...lists,
      where: (c) => (c as ProxyCall).path.includes('continue=') && ++seen >= n,
    };
  };
  const continued = (c: ProxyCall) => c.path.includes('continue=');

  /** Five healthy AGs (three pages of 2), a detect, and a first sweep that fails on page 3. */
  async function incompleteSweep() {
    const { d } = await file.detectOnEmptyCluster(T0 + GRACE_MS + 1_000);
    const paged = await suite.startDetect(new SettableClock(T0 + GRACE_MS + 1_000), {
      env: { SWEEP_PAGE_SIZE: '2' },
    });
    await d.close();
    for (let i = 0; i < 5; i++) await createAgWithStatus(kc, healthyStatus(T0));
    // Twice: the page's in-place retry fails too (shared/kube/in-place-retry.ts, ADR 70).
    suite.proxy.addFault({ kind: 'status', status: 500, match: fromNthContinued(2), times: 2 });
    const ping = resyncPing();
    expect(await postEvent(paged.url, ping)).toMatchObject({
      status: 503,
      body: { result: 'sweep-list-failed' },
    });
    expect(suite.proxy.callsMatching(lists).map((c) => c.status)).toEqual([200, 200, 500, 500]);
    suite.proxy.clearCalls();
    return { url: paged.url, ping };
  }

  it('the redelivery lists only the page that failed: 1 list instead of 3', async () => {
    const { url, ping } = await incompleteSweep();
    expect(await postEvent(url, ping)).toMatchObject({ status: 200, body: { result: 'swept' } });
    const calls = suite.proxy.callsMatching(lists);
    expect(calls.map((c) => [continued(c), c.status])).toEqual([[true, 200]]);
    // A new ping (another id) sweeps from the first page.
    suite.proxy.clearCalls();
    expect(await postEvent(url, resyncPing())).toMatchObject({ status: 200 });
    expect(suite.proxy.count(lists)).toBe(3);
  });

  it('an expired continue token (410): the redelivery starts over from the first page', async () => {
    const { url, ping } = await incompleteSweep();
    suite.proxy.addFault({ kind: 'status', status: 410, match: nthContinued(1), times: 1 });
    expect(await postEvent(url, ping)).toMatchObject({ status: 200, body: { result: 'swept' } });
    const calls = suite.proxy.callsMatching(lists);
    expect(calls.map((c) => [continued(c), c.status])).toEqual([
      [true, 410],
      [false, 200],
      [true, 200],
      [true, 200],
    ]);
  });
});
