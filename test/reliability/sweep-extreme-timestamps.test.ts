// A timestamp the API server accepts but that puts a due time past year 9999 (Ready Unknown since
// 9999-12-31T23:59:59Z) must not break detect's sweep: it still answers 2xx (the API server is
// healthy) and still programs the follow-up alarm for the AG that is really due.

import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Condition } from '../../shared/core/objects/types.js';
import { uniqueName } from '../support/apiserver.js';
import {
  createAgWithStatus,
  deleteAllArtifactGenerators,
  DIGEST,
  INVENTORY,
} from '../support/ag-states.js';
import { SettableClock, startFunction } from '../harness/functions.js';
import { postEvent } from '../support/http-events.js';
import { functionFile } from './support/function-file.js';
import { readAlarm } from '../support/recovery-alarm.js';
import { resyncPing } from '../support/http-events.js';
import { progressing } from '../support/conditions.js';

const { T0, NS, kc, suite } = functionFile('extreme', 'rel-xt', 'ags');
afterAll(() => deleteAllArtifactGenerators(kc));

const waiting = (since: string): Condition => ({
  ...progressing(T0),
  lastTransitionTime: since,
});

/** The alarm's due moment, or 'absent' when there is none. */
const alarmMoment = async (name: string): Promise<number | null | 'absent'> => {
  const alarm = await readAlarm(kc, name);
  return alarm === null ? 'absent' : alarm.moment;
};

async function sweep(alarm: string): Promise<number> {
  const detect = await startFunction({
    fn: 'detect',
    kubeConfig: suite.proxy.kubeConfig('extreme'),
    clock: new SettableClock(T0),
    sinkUrl: suite.sink.url,
    env: { ALARM_NAME: alarm },
  });
  try {
    return (await postEvent(detect.url, resyncPing({}))).status;
  } finally {
    await detect.close();
  }
}

async function stuckSince(since: string): Promise<void> {
  // The API server stores it: a valid RFC 3339 date-time.
  await createAgWithStatus(
    kc,
    { inventory: INVENTORY, observedSourcesDigest: DIGEST, conditions: [waiting(since)] },
    { namespace: NS },
  );
}

describe('detect sweep with an AG whose Ready time is the last second of year 9999', () => {
  afterEach(async () => {
    await deleteAllArtifactGenerators(kc);
  });

  it.each(['9999-12-31T23:59:59Z', '9999-12-31T23:59:59.999999999Z'])(
    'with an AG due in 20 s as well (Ready Unknown since %s): 200, alarm armed for the AG really due',
    async (since) => {
      await stuckSince(since);
      await createAgWithStatus(
        kc,
        {
          inventory: INVENTORY,
          observedSourcesDigest: DIGEST,
          conditions: [progressing(T0 - 10_000)],
        },
        { namespace: NS },
      );
      const alarm = uniqueName('extreme');
      expect({ status: await sweep(alarm), alarm: await alarmMoment(alarm) }).toEqual({
        status: 200,
        alarm: T0 + 21_000,
      });
    },
  );

  it.each(['9999-12-31T23:59:59Z', '9999-12-31T23:59:59.999999999Z'])(
    'as the only AG with a due time (Ready Unknown since %s): the sweep still answers 200',
    async (since) => {
      await stuckSince(since);
      const alarm = uniqueName('extreme');
      const status = await sweep(alarm);
      const moment = await alarmMoment(alarm);
      // Today: 500 internal-error on every resync of an otherwise idle cluster. The due time
      // (since + 30 s) is past year 9999; formatting the alarm moment throws a RangeError in
      // functions/detect/alarm.ts (formatTimeNano), which escapes settle() and the sweep.
      expect({
        status,
        alarmIsUsable: moment === 'absent' || (moment !== null && moment < Date.UTC(10000, 0)),
      }).toEqual({
        status: 200,
        alarmIsUsable: true,
      });
    },
  );
});
