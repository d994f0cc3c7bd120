// The Kubernetes Events of the recovery steps (docs/adr/0033; shared/recovery/kube-event-recorder.ts,
// shared/core/kube-events/), read back from the real API server: force-drift and surface-stalled
// run as their own ServiceAccounts, so a missing RBAC rule fails here as a missing Event.
// Owed Events (docs/adr/0061; shared/recovery/owed-kube-events.ts): a step's Event that the
// degraded API server refuses (500, 429, a held call, an answer lost after the create applied) is
// owed, not lost. The delivery answers 503 `event-owed`; its redelivery, on the same replica or
// another one, writes it, and the Event then exists exactly once with the step's reason and note.
// The Event path never writes the AG. Faults from the suite's proxy.

import { beforeAll, describe, expect, it } from 'vitest';
import {
  ACTION_CLEAR_TRACKING,
  ACTION_FORCE,
  ACTION_STALLED,
  ANNOTATION_ATTEMPTS,
  formatTimeNano,
  maxEventObjectsPerCycle,
  OWED_EVENT_MAX_AGE_MS,
  REASON_FORCED,
  REASON_STALLED,
  REPORTING_CONTROLLER,
  type ArtifactGenerator,
  type PackageSource,
} from '../../../shared/core/index.js';
import {
  agRefOf,
  createArtifactGenerator,
  createPackageSource,
  getArtifactGenerator,
  makeArtifactGenerator,
  makePackageSource,
  PACKAGESOURCE_LABEL,
  uniqueName,
  writeArtifactGeneratorStatus,
} from '../../support/apiserver.js';
import { createAgWithStatus, healthyStatus, stuckStatus } from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import {
  actionEvent,
  agResourceEvent,
  cloudEvent,
  postEvent,
  type Started,
} from '../../support/http-events.js';
import { listEventsAbout, occurrences } from '../../support/kube-events.js';
import type { FaultRule } from '../../support/kube-proxy.js';
import { capturingLogger, functionFile, trackingAnnotations } from './suite-kit.js';
import { marker } from '../../support/conditions.js';

const { T0, kc, suite } = functionFile('kube-events');
const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

/** `fn` on `clock` (its POD_NAME its name unless `env` names another), through the suite's proxy. */
const start = (
  fn: 'force-drift' | 'surface-stalled',
  clock: SettableClock,
  env: Record<string, string> = {},
): Promise<Started> =>
  (fn === 'force-drift' ? suite.startForceDrift : suite.startSurfaceStalled)(clock, {
    env: { POD_NAME: fn, ...env },
  });

const eventsOf = (ag: ArtifactGenerator) =>
  listEventsAbout(kc, ag.metadata?.namespace ?? '', {
    uid: ag.metadata?.uid ?? '',
    name: ag.metadata?.name ?? '',
  });

/** The Events regarding a PackageSource: cluster-scoped, so they live in `default`. */
const psEventsOf = (ps: PackageSource) =>
  listEventsAbout(kc, 'default', { uid: ps.metadata?.uid ?? '', name: ps.metadata?.name ?? '' });

/** surface-stalled when the verdict is due (T0 + 250 s). */
const surfaceAtVerdict = () => start('surface-stalled', new SettableClock(T0 + 250_000));

/** An AG forced five times since T0, its last window closed: Ready False, outputs saved. */
const GIVEN_UP = { ...stuckStatus(T0), conditions: [marker(T0)] };

/** force-drift (with `env`) at T0 + 31 s, given the first force of an AG stuck since T0. */
async function forceStuckAg(env: Record<string, string> = {}) {
  const clock = new SettableClock(T0 + 31_000);
  const fd = await start('force-drift', clock, env);
  const ag = await createAgWithStatus(kc, stuckStatus(T0));
  const answer = await postEvent(fd.url, actionEvent(ACTION_FORCE, ag, 0, T0));
  return { clock, fd, ag, answer };
}

/** The one Event regarding `ag`, which matches `expected` (else the test fails). */
async function onlyEventOf(ag: ArtifactGenerator, expected: object) {
  const events = await eventsOf(ag);
  expect(events).toHaveLength(1);
  expect(events[0]).toMatchObject(expected);
  return events[0];
}

/** A PackageSource and the AG it owns, forced five times since T0: due the stalled verdict. */
async function stalledPair() {
  const name = uniqueName('pks');
  const ps = await createPackageSource(makePackageSource({ name }), kc);
  const ag = await createAgWithStatus(kc, GIVEN_UP, {
    name,
    owner: { name, uid: ps.metadata?.uid ?? '' },
    annotations: trackingAnnotations(5, T0),
  });
  return { name, ps, ag };
}

describe('Events: one per recovery step, on the AG', () => {
  it('a force: SourceWatcherRecoveryForced, Normal, action Force, note "attempt 1/5", regarding the AG', async () => {
    const { ag, answer } = await forceStuckAg({ POD_NAME: 'force-drift-7d9f-abcde' });
    expect(answer.body).toEqual({ result: 'forced' });

    const e = await onlyEventOf(ag, {
      reason: REASON_FORCED,
      type: 'Normal',
      action: 'Force',
      reportingController: REPORTING_CONTROLLER,
      reportingInstance: 'force-drift-7d9f-abcde',
      regarding: {
        kind: 'ArtifactGenerator',
        apiVersion: 'source.extensions.fluxcd.io/v1beta1',
        namespace: ag.metadata?.namespace,
        name: ag.metadata?.name,
        uid: ag.metadata?.uid,
      },
    });
    expect(e?.note).toMatch(/^attempt 1\/5: /);
    expect(e?.eventTime).toMatch(MICRO_TIME);
    expect(e?.series).toBeUndefined();
  });

  it('a duplicate delivery of the same force writes no second Event (the claim is taken)', async () => {
    const { clock, fd, ag } = await forceStuckAg();
    clock.advance(2000);
    expect((await postEvent(fd.url, actionEvent(ACTION_FORCE, ag, 0, T0))).body).toEqual({
      result: 'waiting',
    });
    const events = await eventsOf(ag);
    expect(events.map((e) => [e.reason, occurrences(e)])).toEqual([[REASON_FORCED, 1]]);
  });

  it('a resumed force: its own action, ResumeForce, the same attempt', async () => {
    const clock = new SettableClock(T0 + 11_000);
    const fd = await start('force-drift', clock);
    // Claimed attempt 2 at T0, then interrupted before the marker and requestedAt.
    const ag = await createAgWithStatus(kc, stuckStatus(T0 - 1000), {
      annotations: trackingAnnotations(2, T0, false),
    });
    expect((await postEvent(fd.url, actionEvent(ACTION_FORCE, ag, 2, T0))).body).toEqual({
      result: 'resumed',
    });
    const e = await onlyEventOf(ag, {
      reason: REASON_FORCED,
      action: 'ResumeForce',
      type: 'Normal',
    });
    expect(e?.note).toMatch(/^attempt 2\/5 resumed: /);
  });

  it('recovery, tracking cleared: SourceWatcherRecovered, Normal, naming the honest Ready', async () => {
    const clock = new SettableClock(T0 + 60_000);
    const fd = await start('force-drift', clock);
    const ag = await createAgWithStatus(kc, healthyStatus(T0 + 50_000), {
      annotations: trackingAnnotations(1, T0),
    });
    expect((await postEvent(fd.url, actionEvent(ACTION_CLEAR_TRACKING, ag, 1, T0))).body).toEqual({
      result: 'cleared',
    });
    const e = await onlyEventOf(ag, {
      reason: 'SourceWatcherRecovered',
      type: 'Normal',
      action: 'ClearTracking',
    });
    expect(e?.note).toContain('Ready=True/Succeeded after 1 forced rebuild(s)');
  });

  it('the give-up: SourceWatcherStalled, Warning, naming fluxcd/pkg#934 and the runbook, on the AG and on the PackageSource', async () => {
    const ss = await surfaceAtVerdict();
    const { name, ps, ag } = await stalledPair();
    const answer = await postEvent(ss.url, actionEvent(ACTION_STALLED, ag, 5, T0));
    expect(answer.body).toEqual({ result: 'updated' });

    const e = await onlyEventOf(ag, {
      reason: 'SourceWatcherStalled',
      type: 'Warning',
      action: 'GiveUp',
      regarding: { kind: 'ArtifactGenerator', uid: ag.metadata?.uid },
      related: {
        kind: 'PackageSource',
        name,
        apiVersion: 'cozystack.io/v1alpha1',
        uid: ps.metadata?.uid,
      },
    });
    for (const words of ['fluxcd/pkg#934', 'Runbook', 'restart source-watcher', '5 forced']) {
      expect(e?.note).toContain(words);
    }

    // The same verdict regarding the PackageSource, in `default` (what `kubectl describe
    // packagesource` lists), the AG related.
    const psEvents = await psEventsOf(ps);
    expect(psEvents).toHaveLength(1);
    const p = psEvents[0];
    expect(p).toMatchObject({
      metadata: { namespace: 'default' },
      reason: 'SourceWatcherStalled',
      type: 'Warning',
      action: 'GiveUp',
      reportingController: REPORTING_CONTROLLER,
      reportingInstance: 'surface-stalled',
      related: {
        apiVersion: 'source.extensions.fluxcd.io/v1beta1',
        kind: 'ArtifactGenerator',
        namespace: ag.metadata?.namespace,
        name,
        uid: ag.metadata?.uid,
      },
    });
    expect(p?.regarding).toEqual({
      apiVersion: 'cozystack.io/v1alpha1',
      kind: 'PackageSource',
      name,
      uid: ps.metadata?.uid,
    });
    expect(p?.eventTime).toMatch(MICRO_TIME);
    expect(p?.series).toBeUndefined();
    for (const words of [
      `ArtifactGenerator ${ag.metadata?.namespace}/${name}`,
      'fluxcd/pkg#934',
      'Runbook "SourceWatcherStalled": restart source-watcher',
      'this PackageSource is Ready=False/SourceWatcherStalled',
    ]) {
      expect(p?.note).toContain(words);
    }

    // In step now: a second verdict event writes neither the PackageSource nor another Event.
    expect((await postEvent(ss.url, actionEvent(ACTION_STALLED, ag, 5, T0))).body).toEqual({
      result: 'in-step',
    });
    expect((await eventsOf(ag)).map(occurrences)).toEqual([1]);
    expect((await psEventsOf(ps)).map(occurrences)).toEqual([1]);
  });

  it('the verdict of a PackageSource with a 253-character name: a valid Event name in `default`', async () => {
    const ss = await surfaceAtVerdict();
    const psName = `${uniqueName('pks')}.${'a'.repeat(200)}`.slice(0, 240) + '.' + 'b'.repeat(12);
    const ps = await createPackageSource(makePackageSource({ name: psName }), kc);
    // The owner-name label (at most 63 bytes) cannot carry such a name: ownerReferences alone.
    // Named like its PackageSource, as cozystack names it (docs/adr/0053); its source and artifact
    // names (no dots allowed) are short.
    const manifest = makeArtifactGenerator({
      name: psName,
      sourceName: 'src',
      owner: { name: psName, uid: ps.metadata?.uid ?? '' },
      annotations: trackingAnnotations(5, T0),
    });
    delete manifest.metadata?.labels?.[PACKAGESOURCE_LABEL];
    manifest.spec = {
      ...manifest.spec,
      artifacts: [{ name: 'out', copy: [{ from: '@src/**', to: '@artifact/' }] }],
    };
    const created = await createArtifactGenerator(manifest, kc);
    const ag = await writeArtifactGeneratorStatus(agRefOf(created), GIVEN_UP, kc);
    expect((await postEvent(ss.url, actionEvent(ACTION_STALLED, ag, 5, T0))).body).toEqual({
      result: 'updated',
    });
    const psEvents = await psEventsOf(ps);
    expect(psEvents.map((e) => `${e.type} ${e.reason}/${e.action}`)).toEqual([
      'Warning SourceWatcherStalled/GiveUp',
    ]);
    expect(psEvents[0]?.metadata?.name.length).toBeLessThanOrEqual(253);
  });

  it('the verdict Events refused (403): the verdict is written all the same, one warn per request', async () => {
    const clock = new SettableClock(T0 + 250_000);
    const { logger, logs } = capturingLogger('surface-stalled');
    const ss = await suite.startSurfaceStalled(clock, {
      env: { POD_NAME: 'surface-stalled' },
      logger,
    });
    const refused = (ns?: string) =>
      suite.proxy.addFault({
        kind: 'status',
        status: 403,
        match: {
          clientTag: 'surface-stalled',
          group: 'events.k8s.io',
          resource: 'events',
          verb: 'create',
          ...(ns !== undefined ? { namespace: ns } : {}),
        },
      });
    const refusals = () => logs.find('could not write Kubernetes Event').map((l) => l.level);
    try {
      // Only the PackageSource's Event refused: the AG's is written, one warn naming `default`.
      const onlyPs = refused('default');
      const a = await stalledPair();
      expect((await postEvent(ss.url, actionEvent(ACTION_STALLED, a.ag, 5, T0))).body).toEqual({
        result: 'updated',
      });
      expect((await eventsOf(a.ag)).map((e) => e.reason)).toEqual(['SourceWatcherStalled']);
      expect(await psEventsOf(a.ps)).toEqual([]);
      expect(refusals()).toEqual(['warn']);
      expect(logs.records.find((l) => l.level === 'warn')).toMatchObject({
        namespace: 'default',
        statusCode: 403,
      });
      onlyPs.remove();

      // Both refused: still 'updated'; one warn for the request, the other failure at debug.
      logs.records.length = 0;
      const all = refused();
      const b = await stalledPair();
      expect((await postEvent(ss.url, actionEvent(ACTION_STALLED, b.ag, 5, T0))).body).toEqual({
        result: 'updated',
      });
      expect(await eventsOf(b.ag)).toEqual([]);
      expect(await psEventsOf(b.ps)).toEqual([]);
      expect(refusals().sort()).toEqual(['debug', 'warn']);
      expect(all.applied).toBe(2);
    } finally {
      suite.proxy.clearFaults();
    }
  });

  it('the give-up of an AG with no PackageSource: the Event alone, no related object', async () => {
    const ss = await surfaceAtVerdict();
    const ag = await createAgWithStatus(kc, GIVEN_UP, { annotations: trackingAnnotations(5, T0) });
    const answer = await postEvent(ss.url, actionEvent(ACTION_STALLED, ag, 5, T0));
    expect(answer.body).toEqual({ result: 'no-owner' });
    const events = await eventsOf(ag);
    expect(events.map((e) => `${e.type} ${e.reason}/${e.action}`)).toEqual([
      'Warning SourceWatcherStalled/GiveUp',
    ]);
    expect(events[0]?.related).toBeUndefined();
    // An AG update is not the verdict: nothing new. detect asking again (a resync) is the same
    // step: its series counts 2.
    expect((await postEvent(ss.url, agResourceEvent(ag))).body).toEqual({ result: 'no-owner' });
    expect((await eventsOf(ag)).map(occurrences)).toEqual([1]);
    await postEvent(ss.url, actionEvent(ACTION_STALLED, ag, 5, T0));
    expect((await eventsOf(ag)).map(occurrences)).toEqual([2]);
  });

  it("observe mode's would-force: SourceWatcherRecoveryWouldForce, Normal, nothing else written", async () => {
    const { ag, answer } = await forceStuckAg({ RECOVERY_MODE: 'observe' });
    expect(answer.body).toEqual({ result: 'observed' });
    const e = await onlyEventOf(ag, {
      reason: 'SourceWatcherRecoveryWouldForce',
      type: 'Normal',
      action: 'ObserveForce',
    });
    expect(e?.note).toMatch(/^observe mode: would force attempt 1\/5/);
    expect((await getArtifactGenerator(agRefOf(ag), kc)).metadata?.resourceVersion).toBe(
      ag.metadata?.resourceVersion,
    );
  });

  it('bad input never produces an Event', async () => {
    const clock = new SettableClock(T0 + 31_000);
    const fd = await start('force-drift', clock);
    const ss = await start('surface-stalled', clock);
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    const ref = agRefOf(ag);
    for (const [url, type] of [
      [fd.url, ACTION_FORCE],
      [ss.url, ACTION_STALLED],
    ] as const) {
      for (const data of [
        { ...ref },
        { ...ref, resourceVersion: 1, attempts: 0, decidedAt: 'x' },
        {
          ...ref,
          name: 'Not_A_Name',
          resourceVersion: '1',
          attempts: 0,
          decidedAt: formatTimeNano(T0),
        },
      ]) {
        expect((await postEvent(url, cloudEvent({ type, data }))).status).toBe(400);
      }
    }
    expect(await eventsOf(ag)).toEqual([]);
  });
});

describe('Events: two replicas racing', () => {
  let replicas: { fd: Started[]; ss: Started[]; clock: SettableClock };

  beforeAll(async () => {
    const clock = new SettableClock(T0);
    replicas = {
      clock,
      fd: [
        await start('force-drift', clock, { POD_NAME: 'force-drift-a' }),
        await start('force-drift', clock, { POD_NAME: 'force-drift-b' }),
      ],
      ss: [
        await start('surface-stalled', clock, { POD_NAME: 'surface-stalled-a' }),
        await start('surface-stalled', clock, { POD_NAME: 'surface-stalled-b' }),
      ],
    };
  });

  /** Every replica gets the event `copies` times, all at once (duplicated delivery). */
  async function race(to: Started[], event: () => ReturnType<typeof actionEvent>, copies = 3) {
    await Promise.all(
      to.flatMap((s) => Array.from({ length: copies }, () => postEvent(s.url, event()))),
    );
  }

  it('a whole cycle (5 forces, the verdict, the late recovery): one Event object per step, no storm', async () => {
    const { clock, fd, ss } = replicas;
    const name = uniqueName('pks');
    const ps = await createPackageSource(makePackageSource({ name }), kc);
    clock.t = T0 + 31_000;
    let ag = await createAgWithStatus(kc, stuckStatus(T0), {
      name,
      owner: { name, uid: ps.metadata?.uid ?? '' },
    });
    const backoffs = [30_000, 60_000, 120_000, 240_000];
    for (let attempt = 1; attempt <= 5; attempt++) {
      ag = await getArtifactGenerator(agRefOf(ag), kc);
      await race(fd, () => actionEvent(ACTION_FORCE, ag, attempt - 1, clock.now()));
      clock.advance((backoffs[attempt - 1] ?? 240_000) + 1000);
    }
    ag = await getArtifactGenerator(agRefOf(ag), kc);
    expect(ag.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBe('5');
    await race(ss, () => actionEvent(ACTION_STALLED, ag, 5, clock.now()));
    // source-watcher heals it late: Ready=True; detect asks for the tracking to be cleared.
    clock.advance(60_000);
    ag = await writeArtifactGeneratorStatus(agRefOf(ag), healthyStatus(clock.now()), kc);
    await race(fd, () => actionEvent(ACTION_CLEAR_TRACKING, ag, 5, clock.now()));

    const events = await eventsOf(ag);
    const summary = events
      .map((e) => {
        const what = e.action === 'Force' ? ` ${e.note.split(':')[0]}` : '';
        return `${e.reason}/${e.action}${what} x${occurrences(e)}`;
      })
      .sort();
    expect(summary).toEqual(
      [
        ...[1, 2, 3, 4, 5].map((n) => `SourceWatcherRecoveryForced/Force attempt ${n}/5 x1`),
        'SourceWatcherStalled/GiveUp x1',
        'SourceWatcherRecovered/ClearTracking x1',
      ].sort(),
    );
    // The verdict regarding the PackageSource, in `default`: exactly one object; its series
    // counts the repeats of the verdict that reached the Event write.
    const psEvents = await psEventsOf(ps);
    expect(psEvents.map((e) => `${e.reason}/${e.action}`)).toEqual(['SourceWatcherStalled/GiveUp']);
    const psVerdict = psEvents[0]!;
    const agVerdict = events.find((e) => e.reason === 'SourceWatcherStalled')!;
    expect(occurrences(psVerdict)).toBe(occurrences(agVerdict));
    const objects = events.length + psEvents.length;
    const total = [...events, ...psEvents].reduce((n, e) => n + occurrences(e), 0);
    expect(objects).toBeLessThanOrEqual(maxEventObjectsPerCycle(5));
    console.log(
      `[events] two replicas x 3 deliveries, one cycle: ${objects} Event objects ` +
        `(${events.length} on the AG, ${psEvents.length} on the PackageSource, verdict ` +
        `x${occurrences(psVerdict)}), ${total} occurrences (bound ${maxEventObjectsPerCycle(5)})`,
    );
  });

  it('observe mode: repeats of the same would-force aggregate into one Event, counted in its series', async () => {
    const clock = new SettableClock(T0 + 31_000);
    const observers = [
      await start('force-drift', clock, { RECOVERY_MODE: 'observe', POD_NAME: 'observe-a' }),
      await start('force-drift', clock, { RECOVERY_MODE: 'observe', POD_NAME: 'observe-b' }),
    ];
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    await race(observers, () => actionEvent(ACTION_FORCE, ag, 0, T0));
    let events = await eventsOf(ag);
    expect(events).toHaveLength(1);
    // Six reports at once: one create, five AlreadyExists racing for the series (a bump that
    // loses the precondition three times is dropped: best effort).
    const raced = occurrences(events[0]!);
    expect(raced).toBeGreaterThanOrEqual(2);
    expect(raced).toBeLessThanOrEqual(6);
    // A resync later: still the same stall, still the same object; one replica after the other.
    clock.advance(5 * 60_000);
    for (const s of observers) await postEvent(s.url, actionEvent(ACTION_FORCE, ag, 0, T0));
    events = await eventsOf(ag);
    expect(events).toHaveLength(1);
    const e = events[0];
    expect(e?.reason).toBe('SourceWatcherRecoveryWouldForce');
    expect(e?.series?.count).toBe(raced + 2);
    expect(e?.series?.lastObservedTime).toMatch(MICRO_TIME);
    console.log(
      `[events] observe, two replicas: 6 concurrent then 2 sequential reports -> ` +
        `${events.length} Event object, series count ${e?.series?.count}`,
    );
  });
});

describe('owed Events: a step whose Event write fails', () => {
  /** The force's moment: the AG has been stuck since T0, past the suite's grace. */
  const AT = T0 + 31_000;
  /** Event writes give up sooner here (the product default is 2 s), with room for a loaded machine. */
  const ENV = { POD_NAME: 'force-drift-a', EVENT_WRITE_TIMEOUT_MS: '1500' };

  /** Event creates by force-drift in the AG's namespace. */
  const eventCreates = (ag: ArtifactGenerator) => ({
    clientTag: 'force-drift',
    group: 'events.k8s.io',
    resource: 'events',
    verb: 'create' as const,
    namespace: ag.metadata?.namespace ?? '',
  });

  /** Every request of `clientTag` but its Event creates (the redelivery of an owed answer sends none). */
  const besidesEvents = (clientTag: string) => ({
    clientTag,
    where: (c: { resource?: string }) => c.resource !== 'events',
  });

  type Fault = (ag: ArtifactGenerator) => FaultRule;
  const status =
    (code: number, times?: number, phase: 'before' | 'after' = 'before'): Fault =>
    (ag) => ({
      kind: 'status',
      status: code,
      phase,
      match: eventCreates(ag),
      ...(times !== undefined ? { times } : {}),
    });
  const held: Fault = (ag) => ({ kind: 'timeout', match: eventCreates(ag) });

  /** A stuck AG, force-drift on `clock`, and the force action detect sent for it. */
  async function stuckAg(clock = new SettableClock(AT)) {
    const cap = capturingLogger('force-drift', 'info');
    const fd = await suite.startForceDrift(clock, { env: ENV, logger: cap.logger });
    const ag = await createAgWithStatus(kc, stuckStatus(T0));
    const event = actionEvent(ACTION_FORCE, ag, 0, T0);
    return { clock, fd, ag, event, logs: cap.logs };
  }

  let answered = 0;
  /**
   * Delivers `event` to `fd` `times` times, the clock 1, 2, 4 ... s apart (the Broker's backoff)
   * since the first delivery of the current test.
   */
  async function deliverUntil(fd: Started, event: object, clock: SettableClock, times: number) {
    const answers: string[] = [];
    for (let i = 0; i < times; i++) {
      if (answered > 0) clock.advance(1000 * 2 ** (answered - 1));
      answered++;
      const a = await postEvent(fd.url, event as never);
      answers.push(`${a.status} ${(a.body as { result: string }).result}`);
    }
    return answers;
  }

  describe('a force whose Event write fails: owed, then written exactly once', () => {
    it.each<[string, Fault, string[]]>([
      ['fails once (500)', status(500, 1), ['503 event-owed', '200 forced']],
      [
        'fails 3 times (429)',
        status(429, 3),
        ['503 event-owed', '503 event-owed', '503 event-owed', '200 forced'],
      ],
      [
        'the create applied, its answer lost (500 after)',
        status(500, 1, 'after'),
        ['503 event-owed', '200 forced'],
      ],
    ])(
      '%s: the redeliveries write it and answer as the force did, reading nothing',
      async (_l, fault, want) => {
        answered = 0;
        const { clock, fd, ag, event, logs } = await stuckAg();
        const rule = suite.proxy.addFault(fault(ag));
        let forced: ArtifactGenerator;
        try {
          expect(await deliverUntil(fd, event, clock, 1)).toEqual(want.slice(0, 1));
          forced = await getArtifactGenerator(agRefOf(ag), kc);
          suite.proxy.clearCalls();
          expect(await deliverUntil(fd, event, clock, want.length - 1)).toEqual(want.slice(1));
          // The step was done: its redeliveries send the Event create and nothing else.
          expect(suite.proxy.count(besidesEvents('force-drift'))).toBe(0);
          expect(suite.proxy.count(eventCreates(ag))).toBe(want.length - 1);
        } finally {
          rule.remove();
        }
        const events = await eventsOf(ag);
        expect(events.map((e) => `${e.reason}/${e.action} x${occurrences(e)}`)).toEqual([
          `${REASON_FORCED}/Force x1`,
        ]);
        // The force's own note, with how the stall was found: the object kept by the process.
        expect(events[0]?.note).toMatch(/^attempt 1\/5: .*; found by the time rule/);
        // The Event path wrote nothing on the AG after the force.
        expect((await getArtifactGenerator(agRefOf(ag), kc)).metadata?.resourceVersion).toBe(
          forced.metadata?.resourceVersion,
        );
        expect(logs.find('could not write Kubernetes Event')[0]).toMatchObject({ owed: true });

        // Once written, another delivery sends no Event request and bumps no series.
        suite.proxy.clearCalls();
        expect((await postEvent(fd.url, event)).body).toEqual({ result: 'waiting' });
        expect(suite.proxy.count(eventCreates(ag))).toBe(0);
        expect((await getArtifactGenerator(agRefOf(ag), kc)).metadata?.resourceVersion).toBe(
          forced.metadata?.resourceVersion,
        );
        expect((await eventsOf(ag)).map(occurrences)).toEqual([1]);
      },
    );

    it('fails for the whole delivery (every create held): a later delivery writes it', async () => {
      const { clock, fd, ag, event } = await stuckAg();
      const rule = suite.proxy.addFault(held(ag));
      let forced: ArtifactGenerator;
      try {
        expect((await postEvent(fd.url, event)).body).toEqual({ result: 'event-owed' });
        forced = await getArtifactGenerator(agRefOf(ag), kc);
        clock.advance(1000);
        expect((await postEvent(fd.url, event)).body).toEqual({ result: 'event-owed' });
        expect(rule.applied).toBe(2);
      } finally {
        rule.remove();
      }
      clock.advance(2000);
      expect((await postEvent(fd.url, event)).body).toEqual({ result: 'forced' });
      expect((await eventsOf(ag)).map((e) => `${e.reason}/${e.action} x${occurrences(e)}`)).toEqual(
        [`${REASON_FORCED}/Force x1`],
      );
      expect((await getArtifactGenerator(agRefOf(ag), kc)).metadata?.resourceVersion).toBe(
        forced.metadata?.resourceVersion,
      );
    });

    it('the redelivery reaches another replica (nothing kept): it names the step from the AG and writes it once', async () => {
      const { clock, fd, ag, event } = await stuckAg();
      const rule = suite.proxy.addFault(status(503, 1)(ag));
      expect((await postEvent(fd.url, event)).body).toEqual({ result: 'event-owed' });
      rule.remove();
      clock.advance(1000);
      const other = await suite.startForceDrift(clock, {
        env: { ...ENV, POD_NAME: 'force-drift-b' },
      });
      expect((await postEvent(other.url, event)).body).toEqual({ result: 'waiting' });
      const events = await eventsOf(ag);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ reason: REASON_FORCED, action: 'Force', type: 'Normal' });
      // What opened the gate is not on the AG: the note stops before "found by".
      expect(events[0]?.note).toMatch(
        /^attempt 1\/5: Ready=False\/SourceWatcherRecoveryForced .*fluxcd\/pkg#934\)$/,
      );
      // A third replica, or the first one again: AlreadyExists, no series bump.
      const third = await suite.startForceDrift(clock, {
        env: { ...ENV, POD_NAME: 'force-drift-c' },
      });
      expect((await postEvent(third.url, event)).body).toEqual({ result: 'waiting' });
      // The first replica keeps the Event and its answer: AlreadyExists, and the force's answer.
      expect((await postEvent(fd.url, event)).body).toEqual({ result: 'forced' });
      expect((await eventsOf(ag)).map(occurrences)).toEqual([1]);
    });

    it(`past ${OWED_EVENT_MAX_AGE_MS / 1000} s the owed Event is dropped with a warn line, and the action answered 200 (never dead-lettered)`, async () => {
      const clock = new SettableClock(AT);
      const cap = capturingLogger('force-drift', 'info');
      // A long first backoff, so that no second force is due when the owed window ends.
      const fd = await suite.startForceDrift(clock, {
        env: { ...ENV, RECOVERY_BACKOFF_INITIAL: '6m', RECOVERY_BACKOFF_MAX: '6m' },
        logger: cap.logger,
      });
      const ag = await createAgWithStatus(kc, stuckStatus(T0));
      const event = actionEvent(ACTION_FORCE, ag, 0, T0);
      const rule = suite.proxy.addFault(status(500)(ag));
      try {
        expect((await postEvent(fd.url, event)).body).toEqual({ result: 'event-owed' });
        const forced = await getArtifactGenerator(agRefOf(ag), kc);
        clock.advance(OWED_EVENT_MAX_AGE_MS - 1000);
        expect((await postEvent(fd.url, event)).body).toEqual({ result: 'event-owed' });
        clock.advance(2000);
        expect((await postEvent(fd.url, event)).body).toEqual({ result: 'forced' });
        expect(cap.logs.find('owed Kubernetes Event dropped')).toEqual([
          expect.objectContaining({ level: 'warn', why: 'expired', reason: REASON_FORCED }),
        ]);
        expect(await eventsOf(ag)).toEqual([]);
        expect((await getArtifactGenerator(agRefOf(ag), kc)).metadata?.resourceVersion).toBe(
          forced.metadata?.resourceVersion,
        );
      } finally {
        rule.remove();
      }
    });

    it('a refused Event (403) is not owed: the force answers 200, nothing is retried', async () => {
      const { fd, ag, event, logs } = await stuckAg();
      const rule = suite.proxy.addFault(status(403)(ag));
      try {
        expect((await postEvent(fd.url, event)).body).toEqual({ result: 'forced' });
        expect((await postEvent(fd.url, event)).body).toEqual({ result: 'waiting' });
        expect(rule.applied).toBe(1);
      } finally {
        rule.remove();
      }
      // The second delivery's read of the step: refused once by this process, not asked again.
      expect(logs.find('could not write Kubernetes Event')[0]).toMatchObject({ owed: false });
    });
  });

  describe('the verdict whose Events fail: owed by surface-stalled, written by the redelivery', () => {
    it.each([
      ["the PackageSource's Event (in default) fails once", 'default'],
      ["the AG's Event fails once", undefined],
    ])('%s', async (_l, namespace) => {
      const name = uniqueName('pks');
      const ps = await createPackageSource(makePackageSource({ name }), kc);
      const ag = await createAgWithStatus(
        kc,
        { ...stuckStatus(T0), conditions: [marker(T0)] },
        {
          name,
          owner: { name, uid: ps.metadata?.uid ?? '' },
          annotations: trackingAnnotations(5, T0),
        },
      );
      const ss = await suite.startSurfaceStalled(new SettableClock(T0 + 250_000), {
        env: { POD_NAME: 'surface-stalled', EVENT_WRITE_TIMEOUT_MS: '1500' },
      });
      const rule = suite.proxy.addFault({
        kind: 'status',
        status: 500,
        times: 1,
        match: {
          clientTag: 'surface-stalled',
          group: 'events.k8s.io',
          resource: 'events',
          verb: 'create',
          namespace: namespace ?? ag.metadata?.namespace ?? '',
        },
      });
      const event = actionEvent(ACTION_STALLED, ag, 5, T0);
      try {
        expect((await postEvent(ss.url, event)).body).toEqual({ result: 'event-owed' });
        expect(rule.applied).toBe(1);
      } finally {
        rule.remove();
      }
      // The redelivery writes the verdict's Event and answers as the verdict did, syncing nothing.
      suite.proxy.clearCalls();
      expect((await postEvent(ss.url, event)).body).toEqual({ result: 'updated' });
      expect(suite.proxy.count(besidesEvents('surface-stalled'))).toBe(0);
      const agEvents = await eventsOf(ag);
      const psEvents = await listEventsAbout(kc, 'default', { uid: ps.metadata?.uid ?? '', name });
      expect([...agEvents, ...psEvents].map((e) => `${e.reason} x${occurrences(e)}`)).toEqual([
        `${REASON_STALLED} x1`,
        `${REASON_STALLED} x1`,
      ]);
      // Nothing more once written.
      expect((await postEvent(ss.url, event)).body).toEqual({ result: 'in-step' });
      expect((await eventsOf(ag)).map(occurrences)).toEqual([1]);
    });
  });
});
