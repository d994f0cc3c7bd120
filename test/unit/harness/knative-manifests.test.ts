// The conversion of knative/'s objects into what the Knative emulation routes by
// (harness/knative/manifests.ts: Triggers with their filters and delivery, the Broker's delivery
// as the default) and its ISO 8601 duration parser, on hand-made objects. The manifests of
// knative/ themselves are checked in unit/manifests/triggers.test.ts through the same conversion.

import { describe, expect, it } from 'vitest';
import { parseIsoDuration } from '../../harness/knative/iso-duration.js';
import { toKnativeManifests } from '../../harness/knative/manifests.js';
import type { K8sObject } from '../../support/manifests.js';

describe('toKnativeManifests', () => {
  const trigger = (spec: Record<string, unknown>): K8sObject => ({
    apiVersion: 'eventing.knative.dev/v1',
    kind: 'Trigger',
    metadata: { name: 't', namespace: 'ns1' },
    spec,
  });
  const ksvc = (name: string) => ({
    ref: { apiVersion: 'serving.knative.dev/v1', kind: 'Service', name },
  });
  const delivering = (delivery: Record<string, unknown>) => ({
    broker: 'b',
    subscriber: ksvc('fn'),
    delivery,
  });

  it('flattens filter, subscriber and delivery', () => {
    const [t] = toKnativeManifests([
      trigger({
        broker: 'default',
        filter: { attributes: { type: 'x.y', kind: 'K' } },
        subscriber: ksvc('fn'),
        delivery: {
          retry: 3,
          backoffPolicy: 'exponential',
          backoffDelay: 'PT0.5S',
          deadLetterSink: ksvc('dl'),
        },
      }),
    ]).triggers;
    expect(t).toEqual({
      name: 't',
      namespace: 'ns1',
      broker: 'default',
      attributes: { type: 'x.y', kind: 'K' },
      subscriber: { service: 'fn' },
      delivery: {
        retry: 3,
        backoffPolicy: 'exponential',
        backoffDelayMs: 500,
        deadLetterSink: { service: 'dl' },
      },
    });
  });

  it.each([
    ['its Broker in its namespace', 'ns1', { retry: 2, backoffPolicy: 'linear' }],
    ['no retries with no Broker there', 'ns2', { retry: 0, backoffPolicy: 'exponential' }],
  ])('a Trigger without delivery takes %s', (_name, brokerNs, delivery) => {
    const broker: K8sObject = {
      apiVersion: 'eventing.knative.dev/v1',
      kind: 'Broker',
      metadata: { name: 'b', namespace: brokerNs },
      spec: { delivery: { retry: 2, backoffPolicy: 'linear' } },
    };
    const { triggers } = toKnativeManifests([
      broker,
      trigger({ broker: 'b', subscriber: ksvc('fn') }),
    ]);
    expect(triggers[0]?.delivery).toEqual({ backoffDelayMs: 0, ...delivery });
  });

  it('reads spec.filters', () => {
    const filters = [{ all: [{ exact: { type: 'x' } }, { not: { prefix: { source: '/a' } } }] }];
    const [t] = toKnativeManifests([
      trigger({ broker: 'b', subscriber: ksvc('fn'), filters }),
    ]).triggers;
    expect(t?.filters).toEqual(filters);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['no broker', { subscriber: ksvc('fn') }, /spec.broker missing/],
    [
      'a subscriber that is not a Knative Service',
      { broker: 'b', subscriber: { ref: { apiVersion: 'v1', kind: 'Service', name: 'fn' } } },
      /serving.knative.dev\/v1 Service/,
    ],
    [
      'a subscriber URI only',
      { broker: 'b', subscriber: { uri: 'http://x' } },
      /expected a mapping/,
    ],
    [
      'a non-string filter value',
      { broker: 'b', filter: { attributes: { type: 1 } }, subscriber: ksvc('fn') },
      /not a string/,
    ],
    [
      'a bad retry',
      delivering({ retry: -1, backoffPolicy: 'linear', backoffDelay: 'PT1S' }),
      /retry/,
    ],
    [
      'a bad backoffPolicy',
      delivering({ retry: 1, backoffPolicy: 'random', backoffDelay: 'PT1S' }),
      /backoffPolicy/,
    ],
    [
      'an SQL filter',
      { broker: 'b', subscriber: ksvc('fn'), filters: [{ sql: "type = 'x'" }] },
      /not emulated/,
    ],
    [
      'a bad backoffDelay',
      delivering({ retry: 1, backoffPolicy: 'linear', backoffDelay: '1s' }),
      /ISO 8601/,
    ],
  ])('rejects %s', (_name, spec, message) => {
    expect(() => toKnativeManifests([trigger(spec)])).toThrow(message);
  });
});

describe('parseIsoDuration', () => {
  it.each<[string, number]>([
    ['PT1S', 1000],
    ['PT0.5S', 500],
    ['PT0.2S', 200],
    ['PT2M', 120_000],
    ['PT1H', 3_600_000],
    ['P1D', 86_400_000],
    ['P1DT1H1M1.5S', 90_061_500],
    ['PT0S', 0],
  ])('%s = %d ms', (text, ms) => {
    expect(parseIsoDuration(text)).toBe(ms);
  });

  it.each(['', 'P', 'PT', '1s', 'PT1', 'PT-1S', 'P1S', 'PT1.S', 'pt1s'])('rejects %j', (text) => {
    expect(() => parseIsoDuration(text)).toThrow(/ISO 8601/);
  });
});
