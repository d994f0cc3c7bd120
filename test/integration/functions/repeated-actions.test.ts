// detect does not emit again an action it emitted moments ago (docs/adr/0047), against the real
// test API server: the same stuck AG event delivered again (as the Broker does after a 503 whose
// emit had already happened), or a sweep redelivered, sends one force while the first copy's own
// retries are due; past REPEAT_WINDOW_MS it sends a fresh copy. Asserted on the events the Broker
// (the suite's sink) received.

import { beforeEach, describe, expect, it } from 'vitest';
import { REPEAT_WINDOW_MS } from '../../../functions/detect/recent-actions.js';
import type { ArtifactGenerator } from '../../../shared/core/objects/types.js';
import { rebuildAg } from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import { agResourceEvent, postEvent } from '../../support/http-events.js';
import { functionFile } from './suite-kit.js';
import { resyncPing } from '../../support/http-events.js';

const { T0, kc, suite, ...file } = functionFile('repeated-actions');
/** Inside testConfig's 30 s grace: the force comes from the lost-write signal. */
const AT = T0 + 2_000;

beforeEach(() => {
  suite.sink.events.length = 0;
});

const agEvent = (ag: ArtifactGenerator) => agResourceEvent(ag);

describe('detect: an action emitted moments ago is not emitted again', () => {
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
    const deliver = () => postEvent(d.url, via === 'AG event' ? agEvent(last) : resyncPing());
    expect((await deliver()).status).toBe(200);
    clock.t = AT + laterMs;
    expect((await deliver()).status).toBe(200);
    expect(file.forcesFor(last)).toHaveLength(forces);
  });

  it('another AG moments later is not a repeat: each gets its force', async () => {
    const a = (await rebuildAg(kc, { at: T0, lose: true })).last;
    const b = (await rebuildAg(kc, { at: T0, lose: true })).last;
    const d = await suite.startDetect(new SettableClock(AT));
    for (const ag of [a, b]) expect((await postEvent(d.url, agEvent(ag))).status).toBe(200);
    expect([file.forcesFor(a).length, file.forcesFor(b).length]).toEqual([1, 1]);
  });
});
