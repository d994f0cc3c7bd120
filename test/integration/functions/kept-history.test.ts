// The AG's previous versions, kept by the process (docs/adr/0045-kept-history.md), against the real
// test API server through the fault-injecting proxy. A signalled force needs force-drift's read of
// the AG, its history read and the claim in one delivery; under a storm one of them often fails:
// - the history read starts beside the AG read, so an AG read that fails does not waste it;
// - a redelivery (after a failed AG read or a failed claim) does not read the history again;
// - a later sweep of detect does not read again the history of a revision it read before.
// Each case asserts the AG's state and the history requests that reached the proxy.

import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ANNOTATION_ATTEMPTS,
  REASON_FORCED,
  SIGNAL_LOST_WRITE,
  readyOf,
  type ActionData,
} from '../../../shared/core/index.js';
import type { ArtifactGenerator } from '../../../shared/core/objects/types.js';
import { agRefOf, getArtifactGenerator } from '../../support/apiserver.js';
import { rebuildAg } from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import { postEvent } from '../../support/http-events.js';
import type { CallMatch, ProxyCall } from '../../support/kube-proxy.js';
import { deleteAlarm } from '../../support/recovery-alarm.js';
import { REPEAT_WINDOW_MS } from '../../../functions/detect/recent-actions.js';
import { functionFile, historyRead } from './suite-kit.js';
import { resyncPing } from '../../support/http-events.js';

const { T0, kc, suite, ...file } = functionFile('kept-history');
/** Inside testConfig's 30 s grace: only the verified lost-write signal opens the gate. */
const INSIDE_GRACE = T0 + 5_000;

afterAll(() => deleteAlarm(kc));
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
      suite.proxy.addFault({ kind: 'status', status: 500, times: 1, match: failing });
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
    suite.proxy.addFault({
      kind: 'status',
      status: 500,
      times: 1,
      match: historyRead('force-drift'),
    });
    const event = signalledForce(ag);
    expect(await postEvent(f.url, event)).toMatchObject({
      status: 503,
      body: { result: 'history' },
    });
    expect(await postEvent(f.url, event)).toMatchObject({
      status: 200,
      body: { result: 'forced' },
    });
    expect(historyReads('force-drift', ag)).toHaveLength(2);
  });
});

describe("detect: the sweep's history reads", () => {
  it('a second sweep reads no history for a revision the first sweep read, and emits the same signalled force', async () => {
    const { last: ag } = await rebuildAg(kc, { at: T0, lose: true });
    const clock = new SettableClock(INSIDE_GRACE);
    const d = await suite.startDetect(clock);
    const forcesOfAg = () =>
      file.forcesFor(ag).filter((e) => (e.data as ActionData).signal === SIGNAL_LOST_WRITE).length;
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
