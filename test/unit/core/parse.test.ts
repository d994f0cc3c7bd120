import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  ANNOTATION_ATTEMPTS,
  MAX_ANNOTATIONS,
  MAX_CONDITIONS,
  parseActionData,
  parseArtifactGenerator,
  parsePackageSource,
} from '../../../shared/core/index.js';
import { makeAg, makePs, STALL } from './fixtures.js';
import { succeeded } from '../../support/conditions.js';

const meta = { name: 'a', namespace: 'n' };

describe('parseArtifactGenerator: rejects', () => {
  it.each<[string, unknown, RegExp]>([
    ['undefined', undefined, /must be a JSON object/],
    ['null', null, /must be a JSON object/],
    ['array', [], /must be a JSON object/],
    ['string', 'ag', /must be a JSON object/],
    ['class instance', new Date(0), /must be a JSON object/],
    ['no metadata', { kind: 'ArtifactGenerator' }, /metadata must be an object/],
    ['empty name', { metadata: { name: '', namespace: 'n' } }, /metadata.name/],
    ['numeric name', { metadata: { name: 3, namespace: 'n' } }, /metadata.name/],
    ['no namespace', { metadata: { name: 'a' } }, /metadata.namespace/],
    [
      'wrong kind',
      { kind: 'GitRepository', metadata: meta },
      /kind must be ArtifactGenerator, got "GitRepository"/,
    ],
    [
      'non-string kind',
      { kind: 7, metadata: meta },
      /kind must be ArtifactGenerator, got "number"/,
    ],
  ])('%s', (_label, data, error) => {
    const result = parseArtifactGenerator(data);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(error);
  });

  it('turns a throwing getter into an error instead of throwing', () => {
    const data = { metadata: meta, status: {} };
    Object.defineProperty(data.status, 'conditions', {
      enumerable: true,
      get() {
        throw new Error('boom');
      },
    });
    expect(parseArtifactGenerator(data)).toEqual({
      ok: false,
      error: 'unreadable ArtifactGenerator: boom',
    });
  });
});

describe('parseArtifactGenerator: normalizes into a new object', () => {
  it('keeps a well-formed AG as it is', () => {
    const ag = makeAg();
    const result = parseArtifactGenerator(JSON.parse(JSON.stringify(ag)));
    expect(result).toEqual({ ok: true, ag });
  });

  it('does not share or mutate the input', () => {
    const input = JSON.parse(JSON.stringify(makeAg())) as Record<string, unknown>;
    const before = structuredClone(input);
    const result = parseArtifactGenerator(input);
    if (!result.ok) throw new Error(result.error);
    expect(result.ag).not.toBe(input);
    expect(result.ag.metadata).not.toBe(input['metadata']);
    expect(input).toEqual(before);
  });

  it('drops wrongly typed fields', () => {
    const result = parseArtifactGenerator({
      kind: 'ArtifactGenerator',
      metadata: {
        ...meta,
        generation: '3',
        annotations: { a: 'x', b: 5, c: null, [ANNOTATION_ATTEMPTS]: 2 },
        labels: 'junk',
        ownerReferences: [null, { kind: 'PackageSource', controller: 'true', name: 'p' }],
        creationTimestamp: 5,
      },
      status: {
        conditions: [
          null,
          'Ready',
          { type: 'Ready', status: 'True', observedGeneration: Infinity, reason: 4 },
        ],
        inventory: [1, { name: 'x', digest: 3 }],
        observedSourcesDigest: 7,
      },
    });
    expect(result).toEqual({
      ok: true,
      ag: {
        kind: 'ArtifactGenerator',
        metadata: {
          ...meta,
          annotations: { a: 'x' },
          ownerReferences: [{ kind: 'PackageSource', name: 'p' }],
        },
        status: { conditions: [{ type: 'Ready', status: 'True' }], inventory: [{ name: 'x' }] },
      },
    });
  });

  it('drops inventory that is not an array and a status that is not an object', () => {
    const a = parseArtifactGenerator({ metadata: meta, status: { inventory: { 0: {} } } });
    expect(a).toEqual({ ok: true, ag: { metadata: meta, status: {} } });
    const b = parseArtifactGenerator({ metadata: meta, status: 'broken' });
    expect(b).toEqual({ ok: true, ag: { metadata: meta } });
  });

  it('bounds the work: 64 conditions, 4096 annotations, 64 KiB values', () => {
    const conditions = Array.from({ length: 200 }, (_, i) => ({ type: `T${i}`, status: 'True' }));
    const annotations: Record<string, string> = {};
    for (let i = 0; i < 5000; i++) annotations[`k${i}`] = 'v';
    annotations['k0'] = 'y'.repeat(64 * 1024 + 1);
    annotations['k1'] = 'y'.repeat(64 * 1024);
    const result = parseArtifactGenerator({
      metadata: { ...meta, annotations },
      status: { conditions },
    });
    if (!result.ok) throw new Error(result.error);
    expect(result.ag.status?.conditions).toHaveLength(MAX_CONDITIONS);
    const kept = result.ag.metadata?.annotations ?? {};
    expect(Object.keys(kept)).toHaveLength(MAX_ANNOTATIONS - 1);
    expect(kept).not.toHaveProperty('k0');
    expect(kept['k1']).toHaveLength(64 * 1024);
    expect(kept).not.toHaveProperty('k4096');
  });

  it('keeps a "__proto__" annotation as plain data', () => {
    const result = parseArtifactGenerator(
      JSON.parse('{"metadata":{"name":"a","namespace":"n","annotations":{"__proto__":"x"}}}'),
    );
    if (!result.ok) throw new Error(result.error);
    const annotations = result.ag.metadata?.annotations ?? {};
    expect(Object.getPrototypeOf(annotations)).toBe(Object.prototype);
    expect(Object.keys(annotations)).toEqual(['__proto__']);
  });

  it('never throws on arbitrary JSON-like input', () => {
    fc.assert(
      fc.property(fc.anything(), (data) => {
        const r = parseArtifactGenerator(data);
        expect(typeof r.ok).toBe('boolean');
        const wrapped = parseArtifactGenerator({
          metadata: { ...meta, annotations: data },
          status: { conditions: data, inventory: data },
        });
        expect(wrapped.ok).toBe(true);
      }),
    );
  });
});

describe('parsePackageSource', () => {
  it.each<[string, boolean, unknown]>([
    ['well-formed', true, makePs(succeeded(STALL))],
    ['cluster-scoped: no namespace needed', true, { metadata: { name: 'p' } }],
    ['no name', false, { metadata: {} }],
    ['wrong kind', false, { kind: 'ArtifactGenerator', metadata: { name: 'p' } }],
    ['junk', false, 42],
  ])('%s -> ok=%s', (_label, ok, data) => {
    expect(parsePackageSource(data).ok).toBe(ok);
  });

  it('keeps a well-formed PackageSource as it is and cleans conditions', () => {
    const ps = { ...makePs(succeeded(STALL)), spec: { sourceRef: { name: 'x' } } };
    expect(parsePackageSource(JSON.parse(JSON.stringify(ps)))).toEqual({ ok: true, ps });
    const junk = parsePackageSource({
      metadata: { name: 'p', generation: 'x' },
      status: { conditions: [{ type: 'Ready', status: false }], variants: [1] },
    });
    expect(junk).toEqual({
      ok: true,
      ps: { metadata: { name: 'p' }, status: { conditions: [{ type: 'Ready' }], variants: [1] } },
    });
  });

  it('never throws', () => {
    fc.assert(
      fc.property(fc.anything(), (data) => {
        expect(typeof parsePackageSource(data).ok).toBe('boolean');
        const wrapped = parsePackageSource({
          metadata: { name: 'p', annotations: data },
          status: { conditions: data },
        });
        expect(wrapped.ok).toBe(true);
      }),
    );
  });
});

describe('parseActionData', () => {
  const good = {
    namespace: 'cozy-system',
    name: 'cozystack.platform-1',
    resourceVersion: '42',
    attempts: 2,
    decidedAt: '2026-11-29T16:30:06.123Z',
  };
  it.each<[string, unknown, RegExp | null]>([
    ['valid', good, null],
    ['valid with uid', { ...good, uid: 'u-1' }, null],
    ['valid with extra fields', { ...good, extra: true }, null],
    ['not an object', 'x', /JSON object/],
    ['uppercase name', { ...good, name: 'Bad' }, /name must be a Kubernetes name/],
    ['name too long', { ...good, name: 'a'.repeat(254) }, /name must be/],
    ['empty namespace', { ...good, namespace: '' }, /namespace must be/],
    ['name with slash', { ...good, name: 'a/b' }, /name must be/],
    ['numeric resourceVersion', { ...good, resourceVersion: 42 }, /resourceVersion/],
    ['negative attempts', { ...good, attempts: -1 }, /attempts/],
    ['fractional attempts', { ...good, attempts: 1.5 }, /attempts/],
    ['string attempts', { ...good, attempts: '2' }, /attempts/],
    ['bad decidedAt', { ...good, decidedAt: 'now' }, /decidedAt/],
    ['numeric uid', { ...good, uid: 5 }, /uid/],
  ])('%s', (_label, data, error) => {
    const result = parseActionData(data);
    if (error === null) {
      expect(result).toEqual({
        ok: true,
        value: { ...good, ...(isUid(data) ? { uid: data.uid } : {}) },
      });
    } else {
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.error).toMatch(error);
    }
  });

  it('reports every problem at once', () => {
    const result = parseActionData({ name: 'X', attempts: -1 });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.split('; ')).toHaveLength(5);
  });
});

function isUid(data: unknown): data is { uid: string } {
  return (
    typeof data === 'object' && data !== null && typeof (data as { uid?: unknown }).uid === 'string'
  );
}
