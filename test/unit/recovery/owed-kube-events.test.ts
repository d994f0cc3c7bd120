// The process's memory of owed Kubernetes Events (docs/adr/0061): bounded, oldest dropped first
// with a warn line, taken once, and settled names kept so that a written Event is not sent again.

import { describe, expect, it } from 'vitest';
import { buildEvent, forcedStep } from '../../../shared/core/index.js';
import { createLogger } from '../../../shared/runtime/logger.js';
import { noopMetrics, type OwedEventOutcome } from '../../../shared/runtime/metrics.js';
import {
  createOwedEvents,
  OWED_EVENTS_MAX,
  WRITTEN_EVENTS_MAX,
} from '../../../shared/recovery/owed-kube-events.js';
import { LogCapture } from '../../harness/system/log-capture.js';
import { CFG, STALL } from '../core/fixtures.js';

const logged = () => {
  const logs = new LogCapture();
  return { logs, log: createLogger({ name: 'force-drift', level: 'debug', destination: logs }) };
};

/** The Event of force `i` of the AG `name`. */
const owedOf = (name: string, i: number) => ({
  event: buildEvent(
    forcedStep(1, STALL + i * 1000, CFG),
    { namespace: 'ns', name, uid: `uid-${name}` },
    'pod',
    STALL,
  ),
  since: STALL + i * 1000,
});

describe('createOwedEvents', () => {
  it.each<[string, string | null, string[]]>([
    ["one AG's", 'ns/a', ['a', 'a']],
    ["another AG's", 'ns/b', ['b']],
    ['every AG (null)', null, ['a', 'b', 'a']],
    ['an AG with none', 'ns/c', []],
  ])("take(%s) returns that AG's owed Events once", (_l, key, want) => {
    const { log } = logged();
    const owed = createOwedEvents();
    owed.owe('ns/a', owedOf('a', 1), log);
    owed.owe('ns/b', owedOf('b', 2), log);
    owed.owe('ns/a', owedOf('a', 3), log);
    expect(owed.take(key).map((o) => o.event.regarding.name)).toEqual(want);
    expect(owed.take(key)).toEqual([]);
  });

  it('owing the same Event again keeps one entry; settling it removes it', () => {
    const { log } = logged();
    const owed = createOwedEvents();
    owed.owe('ns/a', owedOf('a', 1), log);
    owed.owe('ns/a', owedOf('a', 1), log);
    owed.owe('ns/a', owedOf('a', 2), log);
    owed.settled(owedOf('a', 2).event.metadata.name);
    expect(owed.take('ns/a')).toHaveLength(1);
    expect(owed.isSettled(owedOf('a', 2).event.metadata.name)).toBe(true);
    expect(owed.isSettled(owedOf('a', 1).event.metadata.name)).toBe(false);
  });

  it(`keeps at most ${OWED_EVENTS_MAX}: the oldest is dropped with a warn line`, () => {
    const { logs, log } = logged();
    const owed = createOwedEvents();
    for (let i = 0; i <= OWED_EVENTS_MAX; i++) owed.owe(`ns/ag-${i}`, owedOf(`ag-${i}`, i), log);
    expect(owed.take(null)).toHaveLength(OWED_EVENTS_MAX);
    expect(logs.find('owed Kubernetes Event dropped')).toEqual([
      expect.objectContaining({
        level: 'warn',
        why: 'capacity',
        event: owedOf('ag-0', 0).event.metadata.name,
      }),
    ]);
  });

  it(`remembers at most ${WRITTEN_EVENTS_MAX} settled names, the oldest forgotten first`, () => {
    const owed = createOwedEvents();
    for (let i = 0; i <= WRITTEN_EVENTS_MAX; i++) owed.settled(`e-${i}`);
    expect(owed.isSettled('e-0')).toBe(false);
    expect(owed.isSettled('e-1')).toBe(true);
    expect(owed.isSettled(`e-${WRITTEN_EVENTS_MAX}`)).toBe(true);
  });

  it('counts each Event owed once (a later failure is not a new one), and each drop', () => {
    const { log } = logged();
    const seen: OwedEventOutcome[] = [];
    const owed = createOwedEvents({ ...noopMetrics, owedEvent: (o) => seen.push(o) });
    owed.owe('ns/a', owedOf('a', 1), log);
    owed.owe('ns/a', owedOf('a', 1), log, true);
    for (let i = 0; i < OWED_EVENTS_MAX; i++) owed.owe(`ns/b-${i}`, owedOf(`b-${i}`, i), log);
    expect(seen.filter((o) => o === 'owed')).toHaveLength(1 + OWED_EVENTS_MAX);
    expect(seen.filter((o) => o === 'dropped')).toHaveLength(1);
  });

  it.each<[string, string, boolean]>([
    ['the same delivery', 'id-1', true],
    ['another delivery', 'id-2', false],
  ])('remembers an owed answer once: %s', (_l, id, found) => {
    const owed = createOwedEvents();
    owed.answeredOwed('id-1', { agKey: 'ns/a', result: 'forced' });
    expect(owed.takeAnswer(id)).toEqual(found ? { agKey: 'ns/a', result: 'forced' } : undefined);
    expect(owed.takeAnswer(id)).toBeUndefined();
  });

  it(`remembers at most ${OWED_EVENTS_MAX} owed answers, the oldest forgotten first`, () => {
    const owed = createOwedEvents();
    for (let i = 0; i <= OWED_EVENTS_MAX; i++) {
      owed.answeredOwed(`id-${i}`, { agKey: `ns/ag-${i}`, result: 'forced' });
    }
    expect(owed.takeAnswer('id-0')).toBeUndefined();
    expect(owed.takeAnswer(`id-${OWED_EVENTS_MAX}`)).toEqual({
      agKey: `ns/ag-${OWED_EVENTS_MAX}`,
      result: 'forced',
    });
  });
});
