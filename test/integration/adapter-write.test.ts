// Writes through the adapter against the real test API server: annotation merge patches, status
// conditions through the subresource, resourceVersion preconditions, schema validation, and the
// field manager. Objects are created and inspected with client-node's CustomObjectsApi.

import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import type { AgRef, ArtifactGenerator, Condition } from '../../shared/core/objects/types.js';
import { createKubeClient } from '../../shared/kube/client.js';
import { isKubeError } from '../../shared/kube/errors.js';
import type { KubePort, PingSource, WriteOptions } from '../../shared/kube/port.js';
import { AG_RESOURCE as AG } from '../harness/knative/index.js';
import {
  agRefOf,
  createArtifactGenerator,
  createPackageSource,
  makeArtifactGenerator,
  makePackageSource,
  MERGE_PATCH,
  testKubeConfig,
  uniqueName,
} from '../support/apiserver.js';
import { marker, readyWith, reconciling, succeeded } from '../support/conditions.js';
import { failureOf } from '../support/kube-failure.js';
import { systemClock } from '../../shared/runtime/clock.js';

const PS = { group: 'cozystack.io', version: 'v1alpha1', plural: 'packagesources' };
const PING = { group: 'sources.knative.dev', version: 'v1', plural: 'pingsources' };
const FIELD_MANAGER = 'adapter-write-test';

const kubeConfig = testKubeConfig();
const raw = kubeConfig.makeApiClient(CustomObjectsApi);
const kube = createKubeClient({ clock: systemClock, kubeConfig, fieldManager: FIELD_MANAGER });
const namespace = uniqueName('write');

interface Obj {
  metadata: {
    resourceVersion: string;
    generation?: number;
    annotations?: Record<string, string>;
    managedFields?: { manager?: string; operation?: string; subresource?: string }[];
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

async function createAg(annotations?: Record<string, string>): Promise<AgRef> {
  const ag = makeArtifactGenerator({ namespace, ...(annotations && { annotations }) });
  return agRefOf(await createArtifactGenerator(ag, kubeConfig));
}

async function readAg(ref: AgRef): Promise<Obj> {
  return (await raw.getNamespacedCustomObject({ ...AG, ...ref })) as Obj;
}

async function createPs(): Promise<string> {
  const ps = await createPackageSource(makePackageSource({ spec: {} }), kubeConfig);
  return ps.metadata?.name ?? '';
}

async function readPs(name: string): Promise<Obj> {
  return (await raw.getClusterCustomObject({ ...PS, name })) as Obj;
}

/** The time of every condition these writes carry. */
const AT = Date.UTC(2025, 5, 7, 8, 9, 10);

const createdPs: string[] = [];
afterAll(async () => {
  await raw.deleteCollectionNamespacedCustomObject({ ...AG, namespace });
  await raw.deleteCollectionNamespacedCustomObject({ ...PING, namespace });
  for (const name of createdPs) await raw.deleteClusterCustomObject({ ...PS, name });
});

describe('annotation merge patch', () => {
  it('sets, overwrites and deletes annotations; generation stays; field manager recorded', async () => {
    const ref = await createAg({ keep: 'me', old: 'x' });
    const before = await readAg(ref);

    const steps: [Record<string, string | null>, Record<string, string>][] = [
      [
        { a: '1', b: '2' },
        { keep: 'me', old: 'x', a: '1', b: '2' },
      ],
      [
        { a: '3', old: null },
        { keep: 'me', a: '3', b: '2' },
      ],
      [{ 'never-there': null }, { keep: 'me', a: '3', b: '2' }],
      [{ a: null, b: null }, { keep: 'me' }],
    ];
    let lastRv = before.metadata.resourceVersion;
    for (const [patch, expected] of steps) {
      const returned = await kube.patchArtifactGeneratorAnnotations(ref, patch, {
        resourceVersion: lastRv,
      });
      expect(returned.metadata?.annotations).toEqual(expected);
      const stored = await readAg(ref);
      expect(stored.metadata.annotations).toEqual(expected);
      expect(stored.metadata.generation).toBe(before.metadata.generation);
      expect(stored.spec).toEqual(before.spec);
      lastRv = stored.metadata.resourceVersion;
      // The field manager owns the annotations it set (and nothing once they are all deleted).
      const owns = stored.metadata.managedFields?.some((f) => f.manager === FIELD_MANAGER);
      expect(owns).toBe(Object.keys(expected).some((k) => k !== 'keep'));
    }
  });

  it('works without a precondition', async () => {
    const ref = await createAg();
    const returned = await kube.patchArtifactGeneratorAnnotations(ref, { 'x.io/y': 'z' });
    expect(returned.metadata?.annotations).toEqual({ 'x.io/y': 'z' });
  });
});

describe('status conditions through the subresource', () => {
  it('replaces AG conditions and keeps the rest of the status and the generation', async () => {
    const ref = await createAg();
    const inventory = [{ name: 'a', namespace, digest: 'sha256:00', filename: 'a.tgz' }];
    await raw.patchNamespacedCustomObjectStatus(
      {
        ...AG,
        ...ref,
        body: { status: { inventory, observedSourcesDigest: 'sha256:11', conditions: [] } },
      },
      MERGE_PATCH,
    );
    const before = await readAg(ref);
    const conditions = [marker(AT), reconciling(AT)];
    const returned: ArtifactGenerator = await kube.patchArtifactGeneratorConditions(
      ref,
      conditions,
      {
        resourceVersion: before.metadata.resourceVersion,
      },
    );
    expect(returned.status?.conditions).toEqual(conditions);
    const stored = await readAg(ref);
    expect(stored.status).toEqual({ inventory, observedSourcesDigest: 'sha256:11', conditions });
    expect(stored.metadata.generation).toBe(before.metadata.generation);
    expect(
      stored.metadata.managedFields?.some(
        (f) => f.manager === FIELD_MANAGER && f.subresource === 'status',
      ),
    ).toBe(true);
  });

  it('replaces PackageSource conditions and keeps status.variants', async () => {
    const name = await createPs();
    createdPs.push(name);
    await raw.patchClusterCustomObjectStatus(
      { ...PS, name, body: { status: { variants: 'default,extra', conditions: [] } } },
      MERGE_PATCH,
    );
    const conditions = [readyWith('Unknown', 'AwaitingSourceWatcherRecovery', AT)];
    const returned = await kube.patchPackageSourceConditions(name, conditions);
    expect(returned.status?.conditions).toEqual(conditions);
    const stored = await readPs(name);
    expect(stored.status).toEqual({ variants: 'default,extra', conditions });
  });

  it('a status sent to the main resource is ignored', async () => {
    const ref = await createAg();
    await kube.patchArtifactGeneratorConditions(ref, [succeeded(AT)]);
    await raw.patchNamespacedCustomObject(
      { ...AG, ...ref, body: { status: { conditions: [readyWith('False', 'Nope', AT)] } } },
      MERGE_PATCH,
    );
    const ag = await kube.getArtifactGenerator(ref);
    expect(ag.status?.conditions).toEqual([succeeded(AT)]);
  });

  it('an invalid condition reason -> InvalidError, nothing changes', async () => {
    const ref = await createAg();
    await kube.patchArtifactGeneratorConditions(ref, [succeeded(AT)]);
    const before = await readAg(ref);
    const err = await failureOf(
      kube.patchArtifactGeneratorConditions(ref, [readyWith('False', 'not a reason!', AT)]),
    );
    expect(err.kind).toBe('Invalid');
    expect(err.statusCode).toBe(422);
    expect(err.message).toContain(`patch-status artifactgenerators ${ref.namespace}/${ref.name}`);
    expect(err.message).toContain('reason');
    const after = await readAg(ref);
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(after.status).toEqual(before.status);
  });
});

describe('a stale resourceVersion -> ConflictError on every write kind, nothing changes', () => {
  interface Case {
    name: string;
    /** Creates the object; returns a reader of the state that matters and the stale write. */
    setup: () => Promise<{
      read: () => Promise<unknown>;
      staleWrite: (rv: string) => Promise<unknown>;
      rv: () => Promise<string>;
      bump: () => Promise<unknown>;
    }>;
  }
  /** The status of an object whose conditions `patch` writes: Ready=True, or stale Ready=False. */
  const conditionsOf = (
    read: () => Promise<Obj>,
    patch: (conditions: Condition[], opts?: WriteOptions) => Promise<unknown>,
  ): Awaited<ReturnType<Case['setup']>> => ({
    read: async () => (await read()).status,
    rv: async () => (await read()).metadata.resourceVersion,
    bump: () => patch([succeeded(AT)]),
    staleWrite: (rv) => patch([readyWith('False', 'Stale', AT)], { resourceVersion: rv }),
  });
  /** A new PingSource, bumped by a schedule patch; `read` of it and `staleWrite` to its name. */
  const newPingSource = async (
    read: (ping: PingSource) => unknown,
    staleWrite: (name: string, rv: string) => Promise<unknown>,
  ): Promise<Awaited<ReturnType<Case['setup']>>> => {
    const name = uniqueName('ping');
    await kube.createPingSource(namespace, pingBody(name));
    const get = () => kube.getPingSource(namespace, name);
    return {
      read: async () => read(await get()),
      rv: async () => (await get()).metadata?.resourceVersion ?? '',
      bump: () => kube.patchPingSource(namespace, name, { spec: { schedule: '1 * * * *' } }),
      staleWrite: (rv) => staleWrite(name, rv),
    };
  };
  const cases: Case[] = [
    {
      name: 'AG annotations',
      setup: async () => {
        const ref = await createAg({ n: '0' });
        return {
          read: async () => (await readAg(ref)).metadata.annotations,
          rv: async () => (await readAg(ref)).metadata.resourceVersion,
          bump: () => kube.patchArtifactGeneratorAnnotations(ref, { n: '1' }),
          staleWrite: (rv) =>
            kube.patchArtifactGeneratorAnnotations(ref, { n: 'stale' }, { resourceVersion: rv }),
        };
      },
    },
    {
      name: 'AG conditions',
      setup: async () => {
        const ref = await createAg();
        return conditionsOf(
          () => readAg(ref),
          (conditions, opts) => kube.patchArtifactGeneratorConditions(ref, conditions, opts),
        );
      },
    },
    {
      name: 'PackageSource conditions',
      setup: async () => {
        const name = await createPs();
        createdPs.push(name);
        return conditionsOf(
          () => readPs(name),
          (conditions, opts) => kube.patchPackageSourceConditions(name, conditions, opts),
        );
      },
    },
    {
      name: 'PingSource patch',
      setup: () =>
        newPingSource(
          (ping) => ping.spec?.schedule,
          (name, rv) =>
            kube.patchPingSource(
              namespace,
              name,
              { spec: { schedule: '2 * * * *' } },
              { resourceVersion: rv },
            ),
        ),
    },
    {
      name: 'PingSource delete',
      setup: () =>
        newPingSource(
          (ping) => ping.metadata?.name,
          (name, rv) => kube.deletePingSource(namespace, name, { resourceVersion: rv }),
        ),
    },
  ];

  it.each(cases)('$name', async ({ setup }) => {
    const c = await setup();
    const stale = await c.rv();
    await c.bump();
    const before = await c.read();
    const currentRv = await c.rv();
    expect(currentRv).not.toBe(stale);
    const err = await failureOf(c.staleWrite(stale));
    expect(err.kind).toBe('Conflict');
    expect(err.statusCode).toBe(409);
    expect(await c.read()).toEqual(before);
    expect(await c.rv()).toBe(currentRv);
    // The same write with the current resourceVersion goes through.
    await c.staleWrite(currentRv);
    expect(await c.rv().catch((e: unknown) => (isKubeError(e, 'NotFound') ? 'gone' : e))).not.toBe(
      currentRv,
    );
  });
});

function pingBody(name: string): Parameters<KubePort['createPingSource']>[1] {
  return {
    metadata: { name, labels: { app: 'adapter-test' } },
    spec: {
      schedule: '0 * * * *',
      contentType: 'application/json',
      data: '{"kind":"sweep"}',
      sink: { uri: 'http://broker.example/default' },
    },
  };
}
