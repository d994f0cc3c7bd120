// Building blocks for hostile input: timestamps of every shape, Kubernetes names (valid ones in
// namespaces no other suite uses), odd JSON values, and objects with keys JSON.parse would keep
// as own properties (__proto__, constructor).

import fc from 'fast-check';
import { formatTimeNano, formatTimeSeconds } from '../../../../shared/core/codecs/time.js';

/** Sets an own, enumerable property even for keys like __proto__ (JSON.stringify keeps it). */
export function withOwn(
  target: Record<string, unknown>,
  key: string,
  value: unknown,
): Record<string, unknown> {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return target;
}

export function fromEntries(
  entries: readonly (readonly [string, unknown])[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries) withOwn(out, k, v);
  return out;
}

/** Any JSON value of small size, including nested arrays and objects. */
export const anyJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 3 });

/** A non-string JSON scalar or container: the wrong type for a string field. */
export const wrongType: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom(Number.MAX_SAFE_INTEGER, -1, 0, 1e308, -0),
  fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
);

/** `valid` `weight` times in `weight + 1`, else a value of the wrong type (wrongType). */
export const orWrongType = (weight: number, valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight, arbitrary: valid }, { weight: 1, arbitrary: wrongType });

const nameBody = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,28}[a-z0-9])?$/);

/** A valid namespace that no test ever creates objects in: `fz` + a DNS label. */
export const fuzzNamespace: fc.Arbitrary<string> = nameBody.map((n) => `fz${n}`.slice(0, 63));

/** A valid object name (it never exists in a fuzzNamespace). */
export const validName: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: nameBody },
  { weight: 1, arbitrary: fc.constantFrom('a', 'a.b.c', '0', 'x'.repeat(253), 'x'.repeat(63)) },
);

/** Strings a Kubernetes name must never be, plus wrong types. */
export const invalidName: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    '',
    'UPPER',
    'a_b',
    'a/b',
    '../etc',
    '%2e%2e',
    '-lead',
    'trail-',
    '.dot',
    'x'.repeat(254),
    'x'.repeat(10_000),
    'ünï',
    'a b',
    'a\u0000b',
    '__proto__',
  ),
  fc.string({ maxLength: 30 }),
  wrongType,
);

/** A name field: mostly valid, sometimes hostile. */
export const nameField: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: validName },
  { weight: 1, arbitrary: invalidName },
);
export const namespaceField: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fuzzNamespace },
  { weight: 1, arbitrary: invalidName },
);

/** Timestamps of every shape around t0: past, future, extreme, malformed, wrong type. */
export function timeValue(t0: number): fc.Arbitrary<unknown> {
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .integer({ min: -7 * 86_400_000, max: 7 * 86_400_000 })
        .map((d) => formatTimeSeconds(t0 + d)),
    },
    {
      weight: 3,
      arbitrary: fc.integer({ min: -900_000, max: 120_000 }).map((d) => formatTimeNano(t0 + d)),
    },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '0001-01-01T00:00:00Z',
        '0000-01-01T00:00:00Z',
        '9999-12-31T23:59:59Z',
        '9999-12-31T23:59:59.999999999Z',
        '9999-12-31T23:59:59+00:00',
        '9999-12-31T23:59:59-23:59',
        '1970-01-01T00:00:00Z',
        '1969-12-31T23:59:59Z',
        '2024-02-29T12:00:00Z',
        '2026-02-29T12:00:00Z',
        '2026-01-01T23:59:60Z',
        '2026-13-01T00:00:00Z',
        '2026-01-01T00:00:00+23:59',
        '2026-01-01T00:00:00-99:00',
        '2026-01-01 00:00:00Z',
        '2026-01-01T00:00:00.1234567891Z',
        '2026-01-01T00:00:00z',
        '',
        'now',
        'yesterday',
      ),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 45 }) },
    { weight: 1, arbitrary: wrongType },
  );
}

/** A metadata.generation / observedGeneration value. */
export const generationValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 3 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(0, -1, Number.MAX_SAFE_INTEGER, 2 ** 53 + 2, 1.5, 1e308, -0),
  },
  { weight: 1, arbitrary: wrongType },
);

/** A string that is exactly `length` characters of `ch`. Cheap for huge sizes. */
export function sized(length: number, ch = 'x'): string {
  return ch.repeat(length);
}
