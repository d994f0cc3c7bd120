// Owed Kubernetes Events (issue 33, docs/adr/0061): a force's Event that the degraded API server
// refuses (500, 429, a held call, an answer lost after the create applied) is owed, not lost. The
// delivery answers 503 `event-owed`; its redelivery, on the same replica or another one, writes it,
// and the Event then exists exactly once with the force's reason and note. The Event path never
// writes the AG. Real API server, force-drift as its ServiceAccount, faults from the suite's proxy.

import { describe, expect, it } from 'vitest';
import {
  ACTION_FORCE,
  ACTION_STALLED,
  OWED_EVENT_MAX_AGE_MS,
  REASON_FORCED,
  REASON_STALLED,
  type ArtifactGenerator,
} from '../../../shared/core/index.js';
import {
  agRefOf,
  createPackageSource,
  getArtifactGenerator,
  makePackageSource,
  uniqueName,
} from '../../support/apiserver.js';
import { marker } from '../../support/conditions.js';
import { createAgWithStatus, stuckStatus } from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import { actionEvent, postEvent, type Started } from '../../support/http-events.js';
import { listEventsAbout, occurrences } from '../../support/kube-events.js';
import type { FaultRule } from '../../support/kube-proxy.js';
import { capturingLogger, functionFile, trackingAnnotations } from './suite-kit.js';

const { T0, kc, suite } = functionFile('owed-events');
/** The force's moment: the AG has been stuck since T0, past the suite's grace. */
const AT = T0 + 31_000;
/** Event writes give up sooner here (the product default is 2 s), with room for a loaded machine. */
const ENV = { POD_NAME: 'force-drift-a', EVENT_WRITE_TIMEOUT_MS: '1500' };

const eventsOf = (ag: ArtifactGenerator) =>
  listEventsAbout(kc, ag.metadata?.namespace ?? '', {
    uid: ag.metadata?.uid ?? '',
    name: ag.metadata?.name ?? '',
  });

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
    expect((await eventsOf(ag)).map((e) => `${e.reason}/${e.action} x${occurrences(e)}`)).toEqual([
      `${REASON_FORCED}/Force x1`,
    ]);
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
