// The API server behaviour the product relies on, proven on the real test API server with raw
// client-node calls (not the product's adapter), plus the kube proxy used for fault injection.

import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgRef, ArtifactGenerator, Condition } from '../../shared/core/objects/types.js';
import {
  DEFAULT_AG_NAMESPACE,
  MERGE_PATCH,
  PACKAGESOURCE_LABEL,
  agRefOf,
  apiStatusOf,
  createArtifactGenerator,
  createOwnedPair,
  createPackageSource,
  customObjects,
  getArtifactGenerator,
  getPackageSource,
  makeArtifactGenerator,
  makePackageSource,
  testKubeConfig,
  uniqueName,
  writeArtifactGeneratorStatus,
  writePackageSourceStatus,
} from '../support/apiserver.js';
import { AG_RESOURCE as AG } from '../harness/knative/index.js';
import { startKubeProxy } from '../support/kube-proxy.js';
import type { KubeProxy } from '../support/kube-proxy.js';
import { progressing, succeeded } from '../support/conditions.js';

const T0 = Date.UTC(2026, 0, 1);

/** A schema-valid Ready (source-watcher's Progressing at T0), with `overrides`. */
function validReady(overrides: Partial<Condition> = {}): Condition {
  return { ...progressing(T0), ...overrides };
}

async function statusOfFailure(call: Promise<unknown>): Promise<number | undefined> {
  try {
    await call;
  } catch (err) {
    return apiStatusOf(err);
  }
  throw new Error('expected the call to fail');
}

/** A raw merge patch of the AG's main resource or of its status subresource. */
const patchAg = (ref: AgRef, body: object) =>
  customObjects().patchNamespacedCustomObject({ ...AG, ...ref, body }, MERGE_PATCH);
const patchAgStatus = (ref: AgRef, body: object) =>
  customObjects().patchNamespacedCustomObjectStatus({ ...AG, ...ref, body }, MERGE_PATCH);

async function newAg(fixture: Parameters<typeof makeArtifactGenerator>[0] = {}) {
  return createArtifactGenerator(makeArtifactGenerator(fixture));
}

describe('test API server: CRDs', () => {
  it.each([
    ['artifactgenerators.source.extensions.fluxcd.io', 'Namespaced'],
    ['packagesources.cozystack.io', 'Cluster'],
    ['pingsources.sources.knative.dev', 'Namespaced'],
  ])('%s is established and %s', async (name, scope) => {
    const ext = testKubeConfig().makeApiClient(k8s.ApiextensionsV1Api);
    const crd = await ext.readCustomResourceDefinition({ name });
    const established = crd.status?.conditions?.find((c) => c.type === 'Established');
    expect(established?.status).toBe('True');
    expect(crd.spec.scope).toBe(scope);
    expect(crd.spec.versions.every((v) => v.subresources?.status !== undefined)).toBe(true);
  });

  it('serves an owned pair built by the fixture helpers', async () => {
    const { packageSource, artifactGenerator } = await createOwnedPair();
    const name = packageSource.metadata?.name ?? '';
    const ag = await getArtifactGenerator(agRefOf(artifactGenerator));
    expect(ag.metadata?.namespace).toBe(DEFAULT_AG_NAMESPACE);
    expect(ag.metadata?.labels?.[PACKAGESOURCE_LABEL]).toBe(name);
    expect(ag.metadata?.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'PackageSource',
        name,
        uid: packageSource.metadata?.uid,
        controller: true,
      }),
    ]);
    expect((await getPackageSource(name)).metadata?.uid).toBe(packageSource.metadata?.uid);
  });
});

describe('test API server: status subresource and generation', () => {
  it('ignores status sent on create and on a main-resource patch', async () => {
    const body: ArtifactGenerator = {
      ...makeArtifactGenerator(),
      status: { observedSourcesDigest: 'sha256:create', conditions: [validReady()] },
    };
    const created = await createArtifactGenerator(body);
    expect(created.status).toBeUndefined();

    const ref = agRefOf(created);
    await writeArtifactGeneratorStatus(ref, { observedSourcesDigest: 'sha256:real' });
    await patchAg(ref, { status: { observedSourcesDigest: 'sha256:main' } });
    expect((await getArtifactGenerator(ref)).status?.observedSourcesDigest).toBe('sha256:real');
  });

  it('ignores metadata and spec sent to the status subresource', async () => {
    const ag = await newAg();
    const ref = agRefOf(ag);
    await patchAgStatus(ref, {
      metadata: { annotations: { sneaky: 'yes' } },
      spec: { sources: [{ alias: 'other', kind: 'Bucket', name: 'other' }] },
      status: { observedSourcesDigest: 'sha256:x' },
    });
    const after = await getArtifactGenerator(ref);
    expect(after.metadata?.annotations?.['sneaky']).toBeUndefined();
    expect(after.spec).toEqual(ag.spec);
    expect(after.metadata?.generation).toBe(1);
    expect(after.status?.observedSourcesDigest).toBe('sha256:x');
  });

  it.each<[string, (ref: AgRef) => Promise<unknown>, number]>([
    [
      'an annotation write',
      (ref) =>
        patchAg(ref, { metadata: { annotations: { 'reconcile.fluxcd.io/requestedAt': 'x' } } }),
      1,
    ],
    [
      'a status write',
      (ref) => writeArtifactGeneratorStatus(ref, { conditions: [validReady()] }),
      1,
    ],
    [
      'a spec change',
      (ref) => patchAg(ref, { spec: { sources: [{ alias: 'b', kind: 'Bucket', name: 'b' }] } }),
      2,
    ],
  ])('%s gives generation %i', async (_what, write, generation) => {
    const ref = agRefOf(await newAg());
    const before = await getArtifactGenerator(ref);
    expect(before.metadata?.generation).toBe(1);
    await write(ref);
    const after = await getArtifactGenerator(ref);
    expect(after.metadata?.generation).toBe(generation);
    expect(after.metadata?.resourceVersion).not.toBe(before.metadata?.resourceVersion);
  });

  it('writes PackageSource status only through its status subresource', async () => {
    const ps = await createPackageSource(makePackageSource());
    const name = ps.metadata?.name ?? '';
    await writePackageSourceStatus(name, {
      conditions: [succeeded(T0)],
      variants: 'default,extra',
    });
    const after = await getPackageSource(name);
    expect(after.status?.conditions?.[0]?.reason).toBe('Succeeded');
    expect(after.status?.variants).toBe('default,extra');
    expect(after.metadata?.generation).toBe(1);
  });
});

describe('test API server: merge patch semantics', () => {
  it('rejects a merge patch with a stale resourceVersion with 409 and changes nothing', async () => {
    const ag = await newAg();
    const ref = agRefOf(ag);
    const staleRv = ag.metadata?.resourceVersion ?? '';
    await writeArtifactGeneratorStatus(ref, { observedSourcesDigest: 'sha256:first' });
    const code = await statusOfFailure(
      patchAgStatus(ref, {
        metadata: { resourceVersion: staleRv },
        status: { observedSourcesDigest: 'sha256:stale' },
      }),
    );
    expect(code).toBe(409);
    expect((await getArtifactGenerator(ref)).status?.observedSourcesDigest).toBe('sha256:first');
  });

  it('accepts a merge patch with the current resourceVersion', async () => {
    const ag = await newAg();
    const ref = agRefOf(ag);
    await patchAg(ref, {
      metadata: { resourceVersion: ag.metadata?.resourceVersion, annotations: { a: '1' } },
    });
    expect((await getArtifactGenerator(ref)).metadata?.annotations?.['a']).toBe('1');
  });

  it('deletes an annotation with a merge-patch null and keeps the others', async () => {
    const ag = await newAg({ annotations: { keep: 'k', drop: 'd' } });
    const ref = agRefOf(ag);
    await patchAg(ref, { metadata: { annotations: { drop: null } } });
    expect((await getArtifactGenerator(ref)).metadata?.annotations).toEqual({ keep: 'k' });
  });

  it.each<[string, Partial<Condition>]>([
    ['a reason with a space', { reason: 'Not Valid' }],
    ['a reason starting with a digit', { reason: '1Reason' }],
    ['an empty reason', { reason: '' }],
    ['a status outside True|False|Unknown', { status: 'Maybe' }],
    ['a message over 32768 characters', { message: 'm'.repeat(32769) }],
    ['a negative observedGeneration', { observedGeneration: -1 }],
    ['a lastTransitionTime that is not a date-time', { lastTransitionTime: 'yesterday' }],
  ])('rejects a condition with %s with 422 and changes nothing', async (_what, bad) => {
    const ref = agRefOf(await newAg());
    await writeArtifactGeneratorStatus(ref, { conditions: [validReady()] });
    const code = await statusOfFailure(
      writeArtifactGeneratorStatus(ref, { conditions: [validReady(bad)] }),
    );
    expect(code).toBe(422);
    expect((await getArtifactGenerator(ref)).status?.conditions).toEqual([validReady()]);
  });

  it.each<[string, Record<string, unknown>]>([
    ['no sources', { sources: [], artifacts: [{ name: 'a', copy: [{ from: 'x', to: 'y' }] }] }],
    [
      'an unknown source kind',
      {
        sources: [{ alias: 's', kind: 'Pod', name: 'n' }],
        artifacts: [{ name: 'a', copy: [{ from: 'x', to: 'y' }] }],
      },
    ],
    [
      'an artifact without copy',
      {
        sources: [{ alias: 's', kind: 'Bucket', name: 'n' }],
        artifacts: [{ name: 'a', copy: [] }],
      },
    ],
  ])('rejects an AG spec with %s with 422', async (_what, spec) => {
    const body = { ...makeArtifactGenerator(), spec };
    expect(await statusOfFailure(createArtifactGenerator(body))).toBe(422);
  });

  it('rejects an inventory entry missing a required field with 422', async () => {
    const ref = agRefOf(await newAg());
    // No digest: required by v2.1.0's schema and v2.3.1's alike (v2.3 made namespace and
    // filename optional; docs/adr/0066).
    const bad = { inventory: [{ name: 'a', namespace: 'ns', filename: 'a.tar.gz' }] };
    expect(await statusOfFailure(writeArtifactGeneratorStatus(ref, bad))).toBe(422);
  });

  it.each([
    [
      'get AG',
      () => getArtifactGenerator({ namespace: DEFAULT_AG_NAMESPACE, name: uniqueName('missing') }),
    ],
    ['get PackageSource', () => getPackageSource(uniqueName('missing'))],
    [
      'patch AG status',
      () =>
        writeArtifactGeneratorStatus(
          { namespace: DEFAULT_AG_NAMESPACE, name: uniqueName('missing') },
          { observedSourcesDigest: 'x' },
        ),
    ],
  ])('answers 404 for %s of a missing object', async (_what, call) => {
    expect(await statusOfFailure(call())).toBe(404);
  });
});

describe('kube proxy', () => {
  let proxy: KubeProxy;

  beforeAll(async () => {
    proxy = await startKubeProxy(testKubeConfig(), { tag: 'untagged' });
  });
  afterAll(async () => {
    await proxy.stop();
  });

  it('forwards calls and records them in Kubernetes terms with the client tag', async () => {
    proxy.clearCalls();
    const viaProxy = proxy.kubeConfig('detect');
    const ag = await createArtifactGenerator(makeArtifactGenerator(), viaProxy);
    const ref = agRefOf(ag);
    await writeArtifactGeneratorStatus(ref, { observedSourcesDigest: 'sha256:p' }, viaProxy);
    await getArtifactGenerator(ref, proxy.kubeConfig());
    const missing = await statusOfFailure(
      getArtifactGenerator({ ...ref, name: uniqueName('missing') }, viaProxy),
    );

    expect(missing).toBe(404);
    expect((await getArtifactGenerator(ref)).status?.observedSourcesDigest).toBe('sha256:p');
    // Each call compared on these eight fields.
    const base = { group: AG.group, resource: 'artifactgenerators', namespace: ref.namespace };
    const call = (c: object) => expect.objectContaining({ ...base, ...c }) as unknown;
    expect(proxy.calls).toEqual([
      call({ verb: 'create', subresource: '', name: '', status: 201, clientTag: 'detect' }),
      call({
        verb: 'patch',
        subresource: 'status',
        name: ref.name,
        status: 200,
        clientTag: 'detect',
      }),
      call({ verb: 'get', subresource: '', name: ref.name, status: 200, clientTag: 'untagged' }),
      call({
        verb: 'get',
        subresource: '',
        name: expect.stringMatching(/^missing-/),
        status: 404,
        clientTag: 'detect',
      }),
    ]);
    expect(proxy.counters({ clientTag: 'detect' })).toEqual({
      'create artifactgenerators': 1,
      'patch artifactgenerators/status': 1,
      'get artifactgenerators': 1,
    });
  });

  it.each([500, 429, 409])(
    'injects a %i on a matching call, once, without reaching the server',
    async (status) => {
      const ref = agRefOf(await newAg());
      const via = proxy.kubeConfig();
      const fault = proxy.addFault({
        match: {
          verb: 'patch',
          resource: 'artifactgenerators',
          subresource: 'status',
          name: ref.name,
        },
        kind: 'status',
        status,
        times: 1,
      });
      const first = await statusOfFailure(
        writeArtifactGeneratorStatus(ref, { observedSourcesDigest: 'one' }, via),
      );
      expect(first).toBe(status);
      expect((await getArtifactGenerator(ref)).status).toBeUndefined();
      await writeArtifactGeneratorStatus(ref, { observedSourcesDigest: 'two' }, via);
      expect((await getArtifactGenerator(ref)).status?.observedSourcesDigest).toBe('two');
      expect(fault.applied).toBe(1);
      expect(
        proxy.callsMatching({ name: ref.name, verb: 'patch' }).map((c) => [c.status, c.fault]),
      ).toEqual([
        [status, 'status'],
        [200, undefined],
      ]);
    },
  );

  it.each([
    ['before', undefined],
    ['after', 'applied'],
  ] as const)(
    'resets the connection (%s the server) so the client sees a transport error',
    async (phase, outcome) => {
      const ref = agRefOf(await newAg());
      proxy.addFault({ match: { name: ref.name, verb: 'patch' }, kind: 'reset', phase, times: 1 });
      let caught: unknown;
      try {
        await writeArtifactGeneratorStatus(
          ref,
          { observedSourcesDigest: 'applied' },
          proxy.kubeConfig(),
        );
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(Error);
      expect(apiStatusOf(caught)).toBeUndefined();
      expect((await getArtifactGenerator(ref)).status?.observedSourcesDigest).toBe(outcome);
    },
  );

  it('cuts a held call after delayMs (timeout) and delays but forwards a slow one', async () => {
    const ref = agRefOf(await newAg());
    const via = proxy.kubeConfig();
    const holdNextGet = (kind: 'timeout' | 'slow') =>
      proxy.addFault({ match: { name: ref.name, verb: 'get' }, kind, delayMs: 200, times: 1 });
    holdNextGet('timeout');
    const started = Date.now();
    await expect(getArtifactGenerator(ref, via)).rejects.toThrow();
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);

    holdNextGet('slow');
    const slowStart = Date.now();
    expect((await getArtifactGenerator(ref, via)).metadata?.name).toBe(ref.name);
    expect(Date.now() - slowStart).toBeGreaterThanOrEqual(190);
  });

  it('streams a watch through', async () => {
    const namespace = uniqueName('watch');
    const seen: string[] = [];
    const watch = new k8s.Watch(proxy.kubeConfig('watcher'));
    let gotAdded: () => void = () => undefined;
    const added = new Promise<void>((done) => (gotAdded = done));
    const request = await watch.watch(
      `/apis/${AG.group}/${AG.version}/namespaces/${namespace}/${AG.plural}`,
      {},
      (type, obj: ArtifactGenerator) => {
        seen.push(`${type} ${obj.metadata?.name}`);
        if (type === 'ADDED') gotAdded();
      },
      () => undefined,
    );
    try {
      const ag = await newAg({ namespace });
      await added;
      expect(seen).toEqual([`ADDED ${ag.metadata?.name}`]);
      expect(proxy.count({ verb: 'watch', clientTag: 'watcher', namespace })).toBe(1);
    } finally {
      request.abort();
    }
  });

  it('rejects a fault rule with a non-positive times', () => {
    expect(() => proxy.addFault({ kind: 'reset', times: 0 })).toThrow(/positive integer/);
  });
});
