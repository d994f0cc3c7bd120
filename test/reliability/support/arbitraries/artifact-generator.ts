// ArtifactGenerator-shaped event data with random breakage: missing, wrong-typed and extreme
// fields, huge inventories and annotation maps, conditions with odd reasons, timestamps from year
// 0 to 9999. Valid names always point into a namespace no test creates objects in.

import fc from 'fast-check';
import {
  ANNOTATION_ATTEMPTS,
  ANNOTATION_LAST_RECOVERY_AT,
  ANNOTATION_REQUESTED_AT,
  REASON_AWAITING,
  REASON_FORCED,
  REASON_STALLED,
} from '../../../../shared/core/index.js';
import {
  AG_API_VERSION,
  AG_KIND,
  PS_API_VERSION,
  PS_KIND,
} from '../../../../shared/core/objects/types.js';
import {
  anyJson,
  fromEntries,
  generationValue,
  orWrongType,
  invalidName,
  nameField,
  namespaceField,
  sized,
  timeValue,
  validName,
  wrongType,
  fuzzNamespace,
} from './values.js';

const reasonValue: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      'Succeeded',
      'Progressing',
      REASON_FORCED,
      REASON_AWAITING,
      REASON_STALLED,
      'BuildFailed',
      'SourceFetchFailed',
      'ReconciliationFailed',
    ),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      '1abc',
      'has space',
      'trailing:',
      'x,y',
      'ünïcödé',
      '__proto__',
      'constructor',
      'a\nb',
      sized(1024, 'a'),
      sized(1025, 'a'),
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: wrongType },
);

const messageValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 8, arbitrary: fc.string({ maxLength: 60 }) },
  { weight: 1, arbitrary: fc.constantFrom(sized(32_768), sized(32_769), sized(200_000)) },
  { weight: 1, arbitrary: wrongType },
);

function condition(t0: number): fc.Arbitrary<unknown> {
  return orWrongType(
    12,
    fc.record(
      {
        type: fc.oneof(
          { weight: 6, arbitrary: fc.constantFrom('Ready', 'Reconciling', 'Stalled') },
          { weight: 1, arbitrary: fc.oneof(fc.string({ maxLength: 10 }), wrongType) },
        ),
        status: fc.oneof(
          { weight: 6, arbitrary: fc.constantFrom('True', 'False', 'Unknown') },
          { weight: 1, arbitrary: fc.oneof(fc.constantFrom('true', 'unknown', ''), wrongType) },
        ),
        reason: reasonValue,
        message: messageValue,
        lastTransitionTime: timeValue(t0),
        observedGeneration: generationValue,
      },
      { requiredKeys: [] },
    ),
  );
}

function conditions(t0: number): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 40, arbitrary: fc.array(condition(t0), { maxLength: 4 }) },
    // Past the number of conditions the parser considers (64), with a Ready far down the list.
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.integer({ min: 62, max: 70 }), condition(t0))
        .map(([n, last]) => [
          ...Array.from({ length: n }, (_, i) => ({ type: `Filler${i}`, status: 'True' })),
          last,
        ]),
    },
    { weight: 1, arbitrary: wrongType },
  );
}

const inventoryEntry: fc.Arbitrary<unknown> = fc.record(
  {
    name: fc.oneof(fc.string({ maxLength: 10 }), wrongType),
    namespace: fc.oneof(fc.string({ maxLength: 10 }), wrongType),
    digest: fc.oneof(fc.constant('sha256:0123'), fc.string({ maxLength: 10 }), wrongType),
    filename: fc.oneof(fc.constant('a.tar.gz'), wrongType),
  },
  { requiredKeys: [] },
);

const inventory: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 10, arbitrary: fc.array(inventoryEntry, { minLength: 1, maxLength: 3 }) },
  { weight: 2, arbitrary: fc.constant([]) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 998, max: 1500 }).map((n) =>
      Array.from({ length: n }, (_, i) => ({
        name: `a${i}`,
        namespace: 'ns',
        digest: 'sha256:00',
        filename: 'f.tgz',
      })),
    ),
  },
  { weight: 1, arbitrary: wrongType },
);

function annotationValue(t0: number): fc.Arbitrary<unknown> {
  return fc.oneof(
    {
      weight: 4,
      arbitrary: fc.constantFrom(
        '0',
        '1',
        '4',
        '5',
        '6',
        '-1',
        '1e3',
        '01',
        ' 5',
        '5 ',
        '1000',
        '1001',
        '9999999999',
        '99999999999',
        '0x5',
        '٣',
        '',
      ),
    },
    {
      weight: 4,
      arbitrary: timeValue(t0).map((v) => (typeof v === 'string' ? v : JSON.stringify(v))),
    },
    { weight: 2, arbitrary: fc.string({ maxLength: 30 }) },
    { weight: 1, arbitrary: fc.constantFrom(sized(65_536), sized(65_537), sized(300_000)) },
    { weight: 4, arbitrary: wrongType },
  );
}

const annotationKey: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      ANNOTATION_ATTEMPTS,
      ANNOTATION_LAST_RECOVERY_AT,
      ANNOTATION_REQUESTED_AT,
    ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', '', '0'),
  },
  { weight: 2, arbitrary: fc.string({ maxLength: 20 }) },
);

function annotations(t0: number): fc.Arbitrary<unknown> {
  return fc.oneof(
    {
      weight: 40,
      arbitrary: fc
        .array(fc.tuple(annotationKey, annotationValue(t0)), { maxLength: 5 })
        .map(fromEntries),
    },
    // More annotations than the parser considers (4096), tracking keys last.
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.integer({ min: 4094, max: 4200 }), annotationValue(t0))
        .map(([n, v]) => {
          const out: Record<string, unknown> = {};
          for (let i = 0; i < n; i++) out[`example.com/k${i}`] = 'v';
          out[ANNOTATION_ATTEMPTS] = v;
          return out;
        }),
    },
    { weight: 1, arbitrary: wrongType },
  );
}

const ownerReference: fc.Arbitrary<unknown> = orWrongType(
  6,
  fc.record(
    {
      apiVersion: fc.oneof(fc.constant(PS_API_VERSION), fc.string({ maxLength: 10 }), wrongType),
      kind: fc.oneof(fc.constant(PS_KIND), fc.string({ maxLength: 10 }), wrongType),
      name: nameField,
      uid: fc.oneof(fc.uuid(), wrongType),
      controller: fc.oneof(fc.boolean(), wrongType),
    },
    { requiredKeys: [] },
  ),
);

const ownerReferences: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 8, arbitrary: fc.array(ownerReference, { maxLength: 3 }) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 62, max: 70 }).map((n) =>
      Array.from({ length: n }, (_, i) => ({
        apiVersion: PS_API_VERSION,
        kind: PS_KIND,
        name: `p${i}`,
        uid: 'u',
        controller: i === n - 1,
      })),
    ),
  },
  { weight: 1, arbitrary: wrongType },
);

function metadata(t0: number): fc.Arbitrary<unknown> {
  const fields = {
    name: nameField,
    namespace: namespaceField,
    uid: fc.oneof(fc.uuid(), wrongType),
    resourceVersion: fc.oneof(fc.nat().map(String), fc.constant(''), wrongType),
    generation: generationValue,
    creationTimestamp: timeValue(t0),
    deletionTimestamp: fc.oneof(timeValue(t0), fc.constant(null)),
    annotations: annotations(t0),
    labels: fc.oneof(
      fc.dictionary(fc.string({ maxLength: 10 }), anyJson, { maxKeys: 3 }),
      wrongType,
    ),
    ownerReferences,
    finalizers: fc.oneof(fc.array(fc.string({ maxLength: 10 }), { maxLength: 2 }), wrongType),
  };
  return fc.oneof(
    {
      weight: 10,
      arbitrary: fc.record(fields, {
        requiredKeys: ['name', 'namespace', 'generation', 'creationTimestamp'],
      }),
    },
    { weight: 3, arbitrary: fc.record(fields, { requiredKeys: [] }) },
    { weight: 1, arbitrary: wrongType },
  );
}

function status(t0: number): fc.Arbitrary<unknown> {
  return orWrongType(
    10,
    fc.record(
      {
        conditions: conditions(t0),
        inventory,
        observedSourcesDigest: fc.oneof(
          fc.constant('sha256:fedc'),
          fc.constant(''),
          fc.string({ maxLength: 10 }),
          wrongType,
        ),
        lastHandledReconcileAt: fc.oneof(timeValue(t0), wrongType),
      },
      { requiredKeys: [] },
    ),
  );
}

/** A broken-in-every-way ArtifactGenerator (or not an object at all). */
export function brokenArtifactGenerator(t0: number): fc.Arbitrary<unknown> {
  return fc.oneof(
    {
      weight: 10,
      arbitrary: fc.record(
        {
          apiVersion: fc.oneof(
            fc.constant(AG_API_VERSION),
            fc.string({ maxLength: 20 }),
            wrongType,
          ),
          kind: fc.oneof(
            { weight: 5, arbitrary: fc.constant(AG_KIND) },
            { weight: 1, arbitrary: fc.constantFrom(PS_KIND, 'Pod', '', 'artifactgenerator') },
            { weight: 1, arbitrary: wrongType },
          ),
          metadata: metadata(t0),
          spec: anyJson,
          status: status(t0),
        },
        { requiredKeys: ['metadata'] },
      ),
    },
    { weight: 1, arbitrary: anyJson },
  );
}

/**
 * A well-formed AG that looks stuck, rebuilding, forced or healthy, with tracking annotations at
 * realistic values: the input that makes the functions decide something.
 */
export function plausibleArtifactGenerator(t0: number): fc.Arbitrary<unknown> {
  return fc
    .record({
      namespace: fuzzNamespace,
      name: validName,
      generation: fc.integer({ min: 1, max: 3 }),
      observedOffset: fc.constantFrom(0, 0, 0, -1),
      readyStatus: fc.constantFrom('Unknown', 'Unknown', 'True', 'False'),
      readyReason: fc.constantFrom('Progressing', 'Succeeded', REASON_FORCED, 'BuildFailed'),
      readyAgo: fc.integer({ min: -120_000, max: 900_000 }),
      attempts: fc.option(fc.integer({ min: 0, max: 7 }).map(String), { nil: undefined }),
      lastAgo: fc.option(fc.integer({ min: -120_000, max: 900_000 }), { nil: undefined }),
      bumped: fc.boolean(),
      owner: fc.option(validName, { nil: undefined }),
    })
    .map((p) => {
      const annotations: Record<string, string> = {};
      if (p.attempts !== undefined) annotations[ANNOTATION_ATTEMPTS] = p.attempts;
      if (p.lastAgo !== undefined) {
        const last = formatNano(t0 - p.lastAgo);
        annotations[ANNOTATION_LAST_RECOVERY_AT] = last;
        if (p.bumped) annotations[ANNOTATION_REQUESTED_AT] = last;
      }
      return {
        apiVersion: AG_API_VERSION,
        kind: AG_KIND,
        metadata: {
          name: p.name,
          namespace: p.namespace,
          uid: 'fuzz-uid',
          resourceVersion: '1',
          generation: p.generation,
          creationTimestamp: formatNano(t0 - 3_600_000),
          annotations,
          ...(p.owner !== undefined
            ? {
                ownerReferences: [
                  {
                    apiVersion: PS_API_VERSION,
                    kind: PS_KIND,
                    name: p.owner,
                    uid: 'u',
                    controller: true,
                  },
                ],
              }
            : {}),
        },
        status: {
          inventory: [
            { name: 'a', namespace: p.namespace, digest: 'sha256:00', filename: 'a.tgz' },
          ],
          observedSourcesDigest: 'sha256:fedc',
          conditions: [
            {
              type: 'Ready',
              status: p.readyStatus,
              reason: p.readyReason,
              message: 'm',
              lastTransitionTime: formatNano(t0 - p.readyAgo),
              observedGeneration: p.generation + p.observedOffset,
            },
          ],
        },
      };
    });
}

function formatNano(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000000Z');
}

/** Reference-mode data: {kind, namespace, name, apiVersion}, sometimes broken. */
export const referenceData: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record(
      {
        kind: fc.oneof(fc.constant(AG_KIND), fc.string({ maxLength: 10 }), wrongType),
        namespace: namespaceField,
        name: nameField,
        apiVersion: fc.oneof(fc.constant(AG_API_VERSION), fc.string({ maxLength: 10 }), wrongType),
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: fc.record({ namespace: invalidName, name: invalidName }) },
  { weight: 1, arbitrary: anyJson },
);
