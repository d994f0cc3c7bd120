// The Broker emulation's Trigger filters (harness/knative/trigger-filter.ts): `spec.filter`'s exact
// attributes, and the newer `spec.filters` expressions, which win when present, as in Knative.

import { describe, expect, it } from 'vitest';
import type { CloudEventV1 } from 'cloudevents';
import type { FilterExpression, TriggerSpec } from '../../harness/knative/manifests.js';
import { triggerMatches } from '../../harness/knative/trigger-filter.js';

const EVENT: CloudEventV1<unknown> = {
  specversion: '1.0',
  id: 'e1',
  type: 'io.cozystack.sourcewatcherrecovery.force',
  source: '/source-watcher-recovery/detect',
  subject: 'cozy-system/platform',
  data: { type: 'not an attribute' },
};

const trigger = (
  attributes: Record<string, string>,
  filters?: FilterExpression[],
): TriggerSpec => ({
  namespace: 'source-watcher-recovery',
  name: 't',
  broker: 'default',
  attributes,
  subscriber: { service: 'force-drift' },
  delivery: { retry: 0, backoffPolicy: 'exponential', backoffDelayMs: 0 },
  ...(filters !== undefined ? { filters } : {}),
});

const FORCE = 'io.cozystack.sourcewatcherrecovery.force';

describe('Trigger filters', () => {
  it.each<[string, TriggerSpec, boolean]>([
    ['no attributes: every event', trigger({}), true],
    ['exact attribute', trigger({ type: FORCE }), true],
    ['every listed attribute must match', trigger({ type: FORCE, subject: 'other' }), false],
    ['an attribute the event lacks does not match', trigger({ time: '' }), false],
    ['data is not an attribute', trigger({ type: 'not an attribute' }), false],
    ['filters: exact', trigger({}, [{ exact: { type: FORCE } }]), true],
    ['filters: prefix', trigger({}, [{ prefix: { source: '/source-watcher-recovery/' } }]), true],
    ['filters: prefix of a missing attribute', trigger({}, [{ prefix: { time: '' } }]), false],
    ['filters: suffix', trigger({}, [{ suffix: { subject: '/platform' } }]), true],
    ['filters: suffix that differs', trigger({}, [{ suffix: { subject: '/other' } }]), false],
    ['filters: not', trigger({}, [{ not: { exact: { type: FORCE } } }]), false],
    [
      'filters: all needs every one',
      trigger({}, [{ all: [{ exact: { type: FORCE } }, { exact: { subject: 'x' } }] }]),
      false,
    ],
    [
      'filters: any needs one',
      trigger({}, [{ any: [{ exact: { type: 'x' } }, { suffix: { type: '.force' } }] }]),
      true,
    ],
    [
      'filters: every expression must match',
      trigger({}, [{ exact: { type: FORCE } }, { exact: { id: 'e2' } }]),
      false,
    ],
    [
      'filters win over filter attributes',
      trigger({ type: 'x' }, [{ exact: { type: FORCE } }]),
      true,
    ],
    ['empty filters: the attributes decide', trigger({ type: 'x' }, []), false],
  ])('%s', (_label, t, matches) => {
    expect(triggerMatches(t, EVENT)).toBe(matches);
  });
});
