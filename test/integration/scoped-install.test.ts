// knative/overlays/scoped on the real kube-apiserver (docs/adr/0055, docs/operations.md): the
// overlay's RBAC for detect and force-drift, installed for test identities of their own (the same
// bindings, another subject), confines them to the listed namespaces: an AG outside the list can
// be neither read nor written (403), and detect's sweep with the overlay's RECOVERY_NAMESPACES
// lists only the listed namespaces, one by one, never the outside AG.

import { createHash } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { claimAnnotations } from '../../shared/core/index.js';
import type { ArtifactGenerator } from '../../shared/core/objects/types.js';
import { createKubeClient } from '../../shared/kube/client.js';
import { isKubeError } from '../../shared/kube/errors.js';
import { SettableClock, startFunction } from '../harness/functions.js';
import {
  createObjects,
  ensureNamespace,
  identityObjects,
  requestToken,
  withToken,
} from '../setup/cluster-rbac.js';
import {
  createAgWithStatus,
  deleteAllArtifactGenerators,
  stuckStatus,
} from '../support/ag-states.js';
import { agRefOf, testKubeConfig, uniqueName } from '../support/apiserver.js';
import { deleteAlarm } from '../harness/system/world.js';
import { postEvent, resyncPing, startEventSink } from '../support/http-events.js';
import { startKubeProxy } from '../support/kube-proxy.js';
import {
  RECOVERY_NAMESPACE,
  findRecoveryConfig,
  renderKustomize,
  type K8sObject,
} from '../support/manifests.js';
import { systemClock } from '../../shared/runtime/clock.js';

const SCOPED = 'knative/overlays/scoped';
const admin = testKubeConfig();
const T0 = Math.floor(Date.now() / 1000) * 1000;

/** RECOVERY_NAMESPACES of the overlay's ConfigMap. */
function scopedNamespaces(): string[] {
  return (findRecoveryConfig(renderKustomize(SCOPED)).data['RECOVERY_NAMESPACES'] ?? '').split(',');
}

/**
 * A ServiceAccount holding exactly what the overlay binds to `sa`: every RoleBinding and
 * ClusterRoleBinding of the render whose subject is `sa`, copied with the test identity as subject
 * (the roles they name are the core's, installed by the global setup from the base).
 */
function scopedIdentity(sa: string): Promise<k8s.KubeConfig> {
  let made = identities.get(sa);
  if (made === undefined) {
    made = makeScopedIdentity(sa);
    identities.set(sa, made);
  }
  return made;
}
const identities = new Map<string, Promise<k8s.KubeConfig>>();

async function makeScopedIdentity(sa: string): Promise<k8s.KubeConfig> {
  const suffix = createHash('sha256').update(`scoped-${sa}`).digest('hex').slice(0, 8);
  const name = `scoped-${sa}-${suffix}`;
  const objects = identityObjects(SCOPED);
  const copies: K8sObject[] = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: RECOVERY_NAMESPACE } },
  ];
  for (const b of objects) {
    if (b.kind !== 'RoleBinding' && b.kind !== 'ClusterRoleBinding') continue;
    const subjects = (b['subjects'] ?? []) as { kind?: string; name?: string }[];
    if (!subjects.some((s) => s.kind === 'ServiceAccount' && s.name === sa)) continue;
    copies.push({
      apiVersion: b.apiVersion,
      kind: b.kind,
      metadata: {
        name: `${b.metadata.name}-${suffix}`,
        ...(b.metadata.namespace !== undefined ? { namespace: b.metadata.namespace } : {}),
      },
      roleRef: b['roleRef'],
      subjects: [{ kind: 'ServiceAccount', name, namespace: RECOVERY_NAMESPACE }],
    });
  }
  await createObjects(admin, copies);
  return withToken(admin, await requestToken(admin, name), name);
}

const statusOf = (p: Promise<unknown>): Promise<number> =>
  p.then(
    () => 200,
    (e: unknown) => (e instanceof k8s.ApiException ? e.code : -1),
  );

// detect's sweep here arms the shipped alarm; the next file starts without it.
afterAll(async () => {
  await deleteAlarm(testKubeConfig());
});

describe('the scoped overlay', () => {
  it('binds detect, force-drift and the AG source only in the listed namespaces', () => {
    const bindings = identityObjects(SCOPED).filter(
      (o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding',
    );
    const confined = ['detect', 'force-drift', 'apiserversource'];
    const holds = (b: K8sObject, sa: string) =>
      ((b['subjects'] ?? []) as { name?: string }[]).some((s) => s.name === sa);
    // A cluster-wide grant of a review API alone (TokenReview, docs/adr/0056) reads and writes no
    // object in any namespace: the only ClusterRoleBinding a confined identity may keep.
    const REVIEWS = new Set(['tokenreviews', 'subjectaccessreviews']);
    const reviewsOnly = (b: K8sObject): boolean => {
      const role = identityObjects(SCOPED).find(
        (o) =>
          o.kind === 'ClusterRole' &&
          o.metadata.name === (b['roleRef'] as { name?: string } | undefined)?.name,
      );
      const rules = (role?.['rules'] ?? []) as { resources?: string[] }[];
      return (
        rules.length > 0 && rules.every((r) => (r.resources ?? []).every((x) => REVIEWS.has(x)))
      );
    };
    for (const sa of confined) {
      expect(
        bindings.filter((b) => b.kind === 'ClusterRoleBinding' && holds(b, sa) && !reviewsOnly(b)),
        sa,
      ).toEqual([]);
      const where = bindings
        .filter(
          (b) => b.kind === 'RoleBinding' && holds(b, sa) && b.metadata.name !== 'detect-alarm',
        )
        .map((b) => b.metadata.namespace)
        .sort();
      expect(where, sa).toEqual([...scopedNamespaces()].sort());
    }
  });

  it('an AG outside the list is neither read nor written; one inside is', async () => {
    const [inside] = scopedNamespaces();
    const outside = uniqueName('outside');
    await ensureNamespace(admin, outside);
    const agIn = await createAgWithStatus(admin, stuckStatus(T0), { namespace: inside ?? '' });
    const agOut = await createAgWithStatus(admin, stuckStatus(T0), { namespace: outside });

    const detect = (await scopedIdentity('detect')).makeApiClient(k8s.CustomObjectsApi);
    const ag = {
      group: 'source.extensions.fluxcd.io',
      version: 'v1beta1',
      plural: 'artifactgenerators',
    };
    const get = (a: ArtifactGenerator) =>
      detect.getNamespacedCustomObject({
        ...ag,
        namespace: a.metadata?.namespace ?? '',
        name: a.metadata?.name ?? '',
      });
    expect(await statusOf(detect.listClusterCustomObject(ag))).toBe(403);
    expect(await statusOf(detect.listNamespacedCustomObject({ ...ag, namespace: outside }))).toBe(
      403,
    );
    expect(await statusOf(get(agOut))).toBe(403);
    expect(
      await statusOf(detect.listNamespacedCustomObject({ ...ag, namespace: inside ?? '' })),
    ).toBe(200);
    expect(await statusOf(get(agIn))).toBe(200);

    const forceDrift = createKubeClient({
      clock: systemClock,
      kubeConfig: await scopedIdentity('force-drift'),
      fieldManager: 'force-drift',
    });
    const refused = await forceDrift
      .patchArtifactGeneratorAnnotations(agRefOf(agOut), claimAnnotations(1, T0))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(isKubeError(refused, 'Forbidden')).toBe(true);
    const written = await forceDrift.patchArtifactGeneratorAnnotations(
      agRefOf(agIn),
      claimAnnotations(1, T0),
    );
    expect(written.metadata?.annotations).toMatchObject(claimAnnotations(1, T0));
  });

  it("detect's sweep lists each listed namespace, never all of them nor the outside AG", async () => {
    await deleteAllArtifactGenerators(admin);
    const namespaces = scopedNamespaces();
    const outside = uniqueName('outside');
    await ensureNamespace(admin, outside);
    const since = T0 - 10 * 60_000;
    // Two AGs in the first namespace, one in each other: with one AG per page the first
    // namespace takes two pages (a continue token inside it), the others one each.
    const stuckIn = await Promise.all(
      [namespaces[0] ?? '', ...namespaces].map((namespace) =>
        createAgWithStatus(admin, stuckStatus(since), { namespace }),
      ),
    );
    const stuckOut = await createAgWithStatus(admin, stuckStatus(since), { namespace: outside });

    const proxy = await startKubeProxy(admin, { tag: 'scoped' });
    const sink = await startEventSink();
    const token = (await scopedIdentity('detect')).getCurrentUser()?.token ?? '';
    const d = await startFunction({
      fn: 'detect',
      kubeConfig: proxy.kubeConfig('scoped-detect', { token }),
      clock: new SettableClock(T0),
      sinkUrl: sink.url,
      env: { RECOVERY_NAMESPACES: namespaces.join(','), SWEEP_PAGE_SIZE: '1' },
    });
    try {
      const answer = await postEvent(d.url, resyncPing());
      expect(answer).toMatchObject({ status: 200, body: { result: 'swept' } });
      const lists = proxy.callsMatching({
        clientTag: 'scoped-detect',
        verb: 'list',
        resource: 'artifactgenerators',
      });
      expect(lists.map((c) => c.namespace ?? '(all)')).toEqual([namespaces[0], ...namespaces]);
      expect(lists.map((c) => c.path.includes('continue='))).toEqual([
        false,
        true,
        ...namespaces.slice(1).map(() => false),
      ]);
      expect(lists.every((c) => c.status === 200)).toBe(true);
      expect(proxy.callsMatching({ clientTag: 'scoped-detect', namespace: outside })).toEqual([]);
      // The stuck AGs inside were forced; the one outside was never seen.
      const forced = sink.events.map((e) => (e.data as { name?: string } | undefined)?.name);
      for (const ag of stuckIn) expect(forced).toContain(ag.metadata?.name);
      expect(forced).not.toContain(stuckOut.metadata?.name);
    } finally {
      await d.close();
      await sink.close();
      await proxy.stop();
    }
  });
});
