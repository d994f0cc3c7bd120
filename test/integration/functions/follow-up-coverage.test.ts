// Every "follow-up not armed" is covered (issue 33, docs/adr/0061): detect on the real API server,
// the alarm's writes failed by the suite's proxy. A transient failure answers 503 and says
// `coveredBy: redelivery`; a refusal answers 200 and says `coveredBy: resync`. Either way the
// resync's sweep covers it within its period: before the due time it arms the alarm for it, after
// it the sweep emits the force with no alarm at all.

import { beforeEach, describe, expect, it } from 'vitest';
import { ACTION_FORCE, formatTimeNano, type ActionData } from '../../../shared/core/index.js';
import {
  createAgWithStatus,
  deleteAllArtifactGenerators,
  stuckStatus,
} from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import { agResourceEvent, postEvent, resyncPing } from '../../support/http-events.js';
import { deleteAlarm, readAlarm } from '../../support/recovery-alarm.js';
import { capturingLogger, functionFile } from './suite-kit.js';
import type { FaultHandle } from '../../support/kube-proxy.js';

const { T0, kc, suite } = functionFile('follow-up-coverage');
/** An AG stuck since T0 is due just past the suite's 30 s grace, its alarm on the next second. */
const DUE = T0 + 30_001;
const ALARM_AT = T0 + 31_000;

beforeEach(async () => {
  suite.sink.events.length = 0;
  suite.proxy.clearFaults();
  await deleteAlarm(kc);
});

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
  suite.sink.events.filter((e) => e.type === ACTION_FORCE && (e.data as ActionData).name === name);

describe('follow-up not armed: what covers it', () => {
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
