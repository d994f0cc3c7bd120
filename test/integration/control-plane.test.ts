// The test cluster is a real one: kube-apiserver enforcing RBAC on ServiceAccount tokens, and
// kube-controller-manager deleting namespaces, creating default ServiceAccounts and collecting
// garbage by ownerReference. These are the facts the other suites rely on.

import * as k8s from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  apiStatusOf,
  createOwnedPair,
  deletePackageSource,
  getArtifactGenerator,
  testKubeConfig,
  uniqueName,
} from '../support/apiserver.js';
import { AG_RESOURCE as AG } from '../harness/knative/index.js';
import { asFunction, withToken } from '../support/identities.js';
import { RECOVERY_NAMESPACE } from '../support/manifests.js';

const admin = testKubeConfig();

async function until(what: string, timeoutMs: number, probe: () => Promise<boolean>) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function whoAmI(kc: k8s.KubeConfig): Promise<string | undefined> {
  const review = await kc.makeApiClient(k8s.AuthenticationV1Api).createSelfSubjectReview({
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  return review.status?.userInfo?.username;
}

describe('the test control plane', () => {
  it('each function calls as its own ServiceAccount, not as the admin', async () => {
    expect(await whoAmI(admin)).toBe('swr-test-admin');
    for (const fn of ['detect', 'force-drift', 'surface-stalled', 'apiserversource']) {
      expect(await whoAmI(asFunction(admin, fn))).toBe(
        `system:serviceaccount:${RECOVERY_NAMESPACE}:${fn}`,
      );
    }
  });

  it('enforces RBAC: a verb no shipped rule grants is 403, a bogus token 401', async () => {
    const detect = asFunction(admin, 'detect').makeApiClient(k8s.CustomObjectsApi);
    const forceDrift = asFunction(admin, 'force-drift').makeApiClient(k8s.CustomObjectsApi);
    // detect may list AGs; force-drift may not delete one (it gets, lists one name's history and
    // patches). Authorization comes before existence: the AG need not exist.
    await expect(detect.listClusterCustomObject(AG)).resolves.toBeDefined();
    const deleted = await forceDrift
      .deleteNamespacedCustomObject({ ...AG, namespace: 'cozy-system', name: 'no-such-ag' })
      .catch((e: unknown) => e);
    expect(apiStatusOf(deleted)).toBe(403);
    // Nobody of ours may read Secrets.
    const secrets = await asFunction(admin, 'surface-stalled')
      .makeApiClient(k8s.CoreV1Api)
      .listNamespacedSecret({ namespace: RECOVERY_NAMESPACE })
      .catch((e: unknown) => e);
    expect(apiStatusOf(secrets)).toBe(403);
    const bogus = await withToken(admin, 'not-a-token')
      .makeApiClient(k8s.CustomObjectsApi)
      .listClusterCustomObject(AG)
      .catch((e: unknown) => e);
    expect(apiStatusOf(bogus)).toBe(401);
  });

  it('gives a new namespace its default ServiceAccount, and deletes a namespace with its objects', async () => {
    const core = admin.makeApiClient(k8s.CoreV1Api);
    const name = uniqueName('cp-ns');
    await core.createNamespace({ body: { metadata: { name } } });
    await until('the default ServiceAccount', 30_000, async () =>
      core
        .readNamespacedServiceAccount({ name: 'default', namespace: name })
        .then(() => true)
        .catch(() => false),
    );
    await core.createNamespacedConfigMap({
      namespace: name,
      body: { metadata: { name: 'x' }, data: { a: 'b' } },
    });
    await core.deleteNamespace({ name });
    await until('the namespace gone', 60_000, async () =>
      core
        .readNamespace({ name })
        .then(() => false)
        .catch((e: unknown) => apiStatusOf(e) === 404),
    );
  });

  it('garbage-collects an ArtifactGenerator whose owning PackageSource is deleted', async () => {
    const { packageSource, artifactGenerator } = await createOwnedPair();
    const ref = {
      namespace: artifactGenerator.metadata?.namespace ?? '',
      name: artifactGenerator.metadata?.name ?? '',
    };
    await deletePackageSource(packageSource.metadata?.name ?? '');
    // The collector picks up new custom resource kinds on its 30 s discovery resync.
    await until('the AG collected', 90_000, async () =>
      getArtifactGenerator(ref)
        .then(() => false)
        .catch((e: unknown) => apiStatusOf(e) === 404),
    );
  });
});
