// The Trigger wiring against the event types the code accepts and emits (shared/core/objects/cloudevent-types.ts).

import { describe, expect, it } from 'vitest';
import {
  ACTION_CLEAR_TRACKING,
  ACTION_FORCE,
  ACTION_STALLED,
  ACTION_TYPES,
  APISERVER_ADD,
  APISERVER_DELETE,
  APISERVER_UPDATE,
  PING,
  TIMER_ALARM,
  TIMER_EXTENSION,
  TIMER_RESYNC,
  type ActionType,
} from '../../../shared/core/objects/cloudevent-types.js';
import { AG_KIND } from '../../../shared/core/objects/types.js';
import { EA_KIND } from '../../../shared/core/external-artifacts/objects.js';
import { toKnativeManifests, type TriggerSpec } from '../../harness/knative/manifests.js';
import { RECOVERY_NAMESPACE, findObject, objectsOfKind } from '../../support/manifests.js';
import { base, recoveryConfig } from './renders.js';

/** The Triggers as the Knative emulation routes by them. */
const triggers = (): TriggerSpec[] => toKnativeManifests(base()).triggers;
/** The subscribing Service (the conversion accepts nothing but Service refs). */
const subscriber = (t: TriggerSpec): string => t.subscriber.service ?? '';
/** A ping Trigger's filter: the PingSource's event type and its recoverytimer extension (ADR 63). */
const timer = (value: string): Record<string, string> => ({
  type: PING,
  [TIMER_EXTENSION]: value,
});
const isResync = (t: TriggerSpec): boolean =>
  t.attributes.type === PING && t.attributes[TIMER_EXTENSION] === TIMER_RESYNC;

/** Which Service must receive each action type. Typed so a new action type fails to compile. */
const ACTION_SUBSCRIBER: Record<ActionType, string> = {
  [ACTION_FORCE]: 'force-drift',
  [ACTION_CLEAR_TRACKING]: 'force-drift',
  [ACTION_STALLED]: 'surface-stalled',
};

const ACCEPTED_TYPES = new Set<string>([
  APISERVER_ADD,
  APISERVER_UPDATE,
  // heal-external-artifacts (docs/adr/0038) takes ExternalArtifact deletes.
  APISERVER_DELETE,
  PING,
  ...ACTION_TYPES,
]);

/** The complete routing table: subscriber and exact filter. */
const EXPECTED_ROUTES: [string, Record<string, string>][] = [
  ['detect', { type: APISERVER_ADD, kind: AG_KIND }],
  ['detect', { type: APISERVER_UPDATE, kind: AG_KIND }],
  ['detect', timer(TIMER_RESYNC)],
  ['detect', timer(TIMER_ALARM)],
  ['force-drift', { type: ACTION_FORCE }],
  ['force-drift', { type: ACTION_CLEAR_TRACKING }],
  ['surface-stalled', { type: APISERVER_ADD, kind: AG_KIND }],
  ['surface-stalled', { type: APISERVER_UPDATE, kind: AG_KIND }],
  ['surface-stalled', { type: ACTION_STALLED }],
  ['surface-stalled', timer(TIMER_RESYNC)],
  ['heal-external-artifacts', { type: APISERVER_UPDATE, kind: EA_KIND }],
  ['heal-external-artifacts', { type: APISERVER_DELETE, kind: EA_KIND }],
];

/**
 * Lower bound of the time a Trigger keeps redelivering: Knative waits backoffDelay * 2^n before
 * retry n; counting n from 0 gives the smaller (conservative) total.
 */
function minRetryWindowMs(t: TriggerSpec): number {
  const d = t.delivery;
  let total = 0;
  for (let n = 0; n < d.retry; n++) {
    total +=
      d.backoffPolicy === 'exponential' ? d.backoffDelayMs * 2 ** n : d.backoffDelayMs * (n + 1);
  }
  return total;
}

describe('Trigger filters', () => {
  it('route exactly the expected (subscriber, filter) pairs, one Trigger each', () => {
    const actual = triggers()
      .map((t) => JSON.stringify([subscriber(t), sorted(t.attributes)]))
      .sort();
    const expected = EXPECTED_ROUTES.map(([s, f]) => JSON.stringify([s, sorted(f)])).sort();
    expect(actual).toEqual(expected);
  });

  it('filter only on types the code accepts or emits', () => {
    const all = triggers();
    expect(all.length).toBeGreaterThan(0);
    for (const t of all) {
      expect(t.attributes.type, t.name).toBeDefined();
      expect(ACCEPTED_TYPES.has(t.attributes.type ?? ''), `${t.name}: ${t.attributes.type}`).toBe(
        true,
      );
    }
  });

  it.each(ACTION_TYPES.map((type) => [type, ACTION_SUBSCRIBER[type]]))(
    'action %s reaches %s and nothing else',
    (type, service) => {
      const matching = triggers().filter((t) => t.attributes.type === type);
      expect(matching.map(subscriber)).toEqual([service]);
    },
  );

  it('ApiServerSource types are narrowed to ArtifactGenerators, or ExternalArtifacts for the heal', () => {
    const apiserver = triggers().filter(
      (t) =>
        t.attributes.type === APISERVER_ADD ||
        t.attributes.type === APISERVER_UPDATE ||
        t.attributes.type === APISERVER_DELETE,
    );
    expect(apiserver.length).toBe(6);
    for (const t of apiserver) {
      expect(t.attributes.kind, t.name).toBe(
        subscriber(t) === 'heal-external-artifacts' ? EA_KIND : AG_KIND,
      );
    }
  });

  it('ping Triggers match what a PingSource sets: the resync in the manifests, or the alarm detect programs', () => {
    const objects = base();
    const config = recoveryConfig(objects);
    const resync = findObject(objects, 'PingSource', config.RESYNC_PINGSOURCE ?? '');
    const set = (resync.spec as { ceOverrides?: { extensions?: Record<string, string> } })
      .ceOverrides?.extensions;
    // The alarm's: functions/detect/alarm.ts writes TIMER_ALARM (test/integration checks it).
    const known = new Set([set?.[TIMER_EXTENSION], TIMER_ALARM]);
    const pings = triggers().filter((t) => t.attributes.type === PING);
    expect(pings.length).toBe(3);
    for (const t of pings) {
      expect(known.has(t.attributes[TIMER_EXTENSION]), t.name).toBe(true);
      // Nothing that names a namespace: the source does.
      expect(Object.keys(t.attributes).sort(), t.name).toEqual([TIMER_EXTENSION, 'type'].sort());
    }
    expect(set?.[TIMER_EXTENSION]).toBe(TIMER_RESYNC);
  });
});

describe('Trigger targets and delivery', () => {
  it('every Trigger is on Broker `default` in the namespace, and subscribes a rendered Service', () => {
    const objects = base();
    findObject(objects, 'Broker', 'default');
    const services = new Set(objectsOfKind(objects, 'Service').map((s) => s.metadata.name));
    for (const t of triggers()) {
      expect(t.broker, t.name).toBe('default');
      expect(t.namespace, t.name).toBe(RECOVERY_NAMESPACE);
      expect(services.has(subscriber(t)), `${t.name} -> ${subscriber(t)}`).toBe(true);
    }
  });

  it('every Trigger has an explicit delivery: exponential backoff and the dead-letter Service', () => {
    findObject(base(), 'Service', 'dead-letter');
    // Explicit: the Trigger's own spec.delivery, not the one it would inherit from the Broker.
    for (const o of objectsOfKind(base(), 'Trigger')) {
      expect((o.spec as { delivery?: unknown }).delivery, o.metadata.name).toBeDefined();
    }
    for (const t of triggers()) {
      expect(t.delivery.backoffPolicy, t.name).toBe('exponential');
      expect(t.delivery.retry, t.name).toBeGreaterThanOrEqual(1);
      expect(t.delivery.backoffDelayMs, t.name).toBeGreaterThanOrEqual(100);
      expect(t.delivery.deadLetterSink, t.name).toEqual({ service: 'dead-letter' });
    }
  });

  it('every Trigger but the resyncs keeps redelivering past an 8-minute storm (ADR 49)', () => {
    const critical = triggers().filter(
      (t) => !isResync(t) && subscriber(t) !== 'heal-external-artifacts',
    );
    expect(critical.length).toBe(8);
    for (const t of critical) {
      expect(minRetryWindowMs(t), t.name).toBeGreaterThan(8 * 60_000);
      // ... but give up within minutes: the alarm and the resync re-derive anything dropped.
      expect(minRetryWindowMs(t), t.name).toBeLessThanOrEqual(10 * 60_000);
    }
  });

  it('a resync gives up within seconds: the next tick is 5 minutes away', () => {
    const resyncs = triggers().filter(isResync);
    expect(resyncs.length).toBe(2);
    for (const t of resyncs) expect(minRetryWindowMs(t), t.name).toBeLessThanOrEqual(30_000);
  });

  it('dead-letter subscribes to nothing (a dead letter must not loop back)', () => {
    expect(triggers().filter((t) => subscriber(t) === 'dead-letter')).toEqual([]);
  });

  it('every other Service is reached by at least one Trigger', () => {
    const subscribed = new Set(triggers().map(subscriber));
    const services = objectsOfKind(base(), 'Service')
      .map((s) => s.metadata.name)
      .filter((n) => n !== 'dead-letter');
    expect(services.sort()).toEqual([
      'detect',
      'force-drift',
      'heal-external-artifacts',
      'surface-stalled',
    ]);
    for (const s of services) expect(subscribed.has(s), s).toBe(true);
  });
});

function sorted(filter: Readonly<Record<string, string>>): [string, string][] {
  return Object.entries(filter).sort(([a], [b]) => a.localeCompare(b));
}
