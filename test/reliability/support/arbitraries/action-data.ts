// Action-event data ({namespace, name, uid, resourceVersion, attempts, decidedAt}) of every shape.

import fc from 'fast-check';
import { formatTimeNano } from '../../../../shared/core/codecs/time.js';
import { anyJson, fromEntries, namespaceField, nameField, timeValue, wrongType } from './values.js';

export function actionData(t0: number): fc.Arbitrary<unknown> {
  const fields = {
    namespace: namespaceField,
    name: nameField,
    uid: fc.oneof({ weight: 4, arbitrary: fc.uuid() }, { weight: 1, arbitrary: wrongType }),
    resourceVersion: fc.oneof(
      { weight: 4, arbitrary: fc.nat().map(String) },
      { weight: 1, arbitrary: fc.oneof(fc.constant(''), wrongType) },
    ),
    attempts: fc.oneof(
      { weight: 4, arbitrary: fc.integer({ min: 0, max: 6 }) },
      {
        weight: 2,
        arbitrary: fc.constantFrom(-1, 1.5, 2 ** 53, Number.MAX_SAFE_INTEGER, 1e308, '1', null),
      },
      { weight: 1, arbitrary: wrongType },
    ),
    decidedAt: fc.oneof(
      {
        weight: 4,
        arbitrary: fc.integer({ min: -60_000, max: 60_000 }).map((d) => formatTimeNano(t0 + d)),
      },
      { weight: 2, arbitrary: timeValue(t0) },
    ),
  };
  return fc.oneof(
    {
      weight: 8,
      arbitrary: fc.record(fields, {
        requiredKeys: ['namespace', 'name', 'resourceVersion', 'attempts', 'decidedAt'],
      }),
    },
    { weight: 3, arbitrary: fc.record(fields, { requiredKeys: [] }) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.record(fields),
          fc.array(
            fc.tuple(fc.constantFrom('__proto__', 'constructor', 'extra', 'namespace'), anyJson),
            { maxLength: 3 },
          ),
        )
        .map(([base, extra]) => fromEntries([...Object.entries(base), ...extra])),
    },
    { weight: 1, arbitrary: anyJson },
  );
}

/** PingSource data: the alarm's {purpose, due}, the resync's empty body, or anything. */
export function pingData(t0: number): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.record({ purpose: fc.constantFrom('follow-up', 'resync', ''), due: timeValue(t0) }),
    fc.constant({}),
    anyJson,
  );
}
