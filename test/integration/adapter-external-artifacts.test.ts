// The ExternalArtifact adapter (shared/kube/external-artifact-client.ts) against the real
// kube-apiserver: list by label (cached and fresh, paginated), delete with uid and resourceVersion
// preconditions, typed errors, and bad input refused before any request.

import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EA_API_VERSION, EA_KIND, LABEL_GENERATOR } from '../../shared/core/index.js';
import { isKubeError } from '../../shared/kube/errors.js';
import { createExternalArtifactClient } from '../../shared/kube/external-artifact-client.js';
import { testKubeConfig, uniqueName } from '../support/apiserver.js';
import { startKubeProxy, type KubeProxy } from '../support/kube-proxy.js';
import { TENANT_NAME, tenantKubeConfig } from '../support/tenant-identity.js';
import { systemClock } from '../../shared/runtime/clock.js';

const NS = 'cozy-system';
const EA = { group: 'source.toolkit.fluxcd.io', version: 'v1', plural: 'externalartifacts' };
const kc = testKubeConfig();
const raw = kc.makeApiClient(CustomObjectsApi);
let proxy: KubeProxy;

beforeAll(async () => {
  proxy = await startKubeProxy(kc, { tag: 'ea-adapter' });
});
afterAll(async () => {
  await proxy.stop();
});

const client = () =>
  createExternalArtifactClient({
    clock: systemClock,
    kubeConfig: proxy.kubeConfig('ea-adapter'),
    requestTimeoutMs: 5000,
  });

async function create(name: string, uid: string) {
  return (await raw.createNamespacedCustomObject({
    ...EA,
    namespace: NS,
    body: {
      apiVersion: EA_API_VERSION,
      kind: EA_KIND,
      metadata: { name, namespace: NS, labels: { [LABEL_GENERATOR]: uid } },
      spec: {},
    },
  })) as { metadata: { uid: string; resourceVersion: string } };
}

async function kindOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    return isKubeError(e) ? e.kind : 'other';
  }
}

describe('ExternalArtifact adapter', () => {
  it('lists by label selector, across pages, cached or fresh', async () => {
    const uid = uniqueName('gen');
    const names = [uniqueName('ea'), uniqueName('ea'), uniqueName('ea')];
    for (const n of names) await create(n, uid);
    await create(uniqueName('ea'), uniqueName('other'));
    const c = client();
    const seen: string[] = [];
    let token: string | undefined;
    do {
      const page = await c.listExternalArtifacts({
        namespace: NS,
        labelSelector: `${LABEL_GENERATOR}=${uid}`,
        limit: 2,
        ...(token !== undefined ? { continueToken: token } : {}),
      });
      seen.push(...page.items.map((i) => i.metadata?.name ?? ''));
      token = page.continueToken;
    } while (token !== undefined);
    expect(seen.sort()).toEqual([...names].sort());
    const cached = await c.listExternalArtifacts({
      namespace: NS,
      labelSelector: `${LABEL_GENERATOR}=${uid}`,
      cached: true,
    });
    expect(cached.items).toHaveLength(3);
  });

  it('deletes only the version judged: a changed object is a Conflict, a re-created one too, a gone one NotFound', async () => {
    const c = client();
    const name = uniqueName('ea');
    const first = await create(name, 'u');
    const ref = { namespace: NS, name };
    const { uid, resourceVersion } = first.metadata;
    // In this order: the two stale preconditions delete nothing, the right one deletes it once.
    for (const [precondition, kind] of [
      [{ uid, resourceVersion: '1' }, 'Conflict'],
      [{ uid: 'someone-else', resourceVersion }, 'Conflict'],
      [{ uid, resourceVersion }, 'ok'],
      [{ uid, resourceVersion }, 'NotFound'],
    ] as const) {
      expect(await kindOf(c.deleteExternalArtifact(ref, precondition))).toBe(kind);
    }
  });

  it('asks the authorizer whether a ServiceAccount may apply ExternalArtifacts (a tenant: in its own namespace only)', async () => {
    const own = 'ea-adapter-tenant';
    await tenantKubeConfig(own); // makes the tenant's ServiceAccount, Role and RoleBinding
    const c = client();
    const sa = { namespace: own, name: TENANT_NAME };
    expect(await c.mayApplyExternalArtifacts(sa, own)).toBe(true);
    expect(await c.mayApplyExternalArtifacts(sa, NS)).toBe(false);
    expect(await c.mayApplyExternalArtifacts({ namespace: own, name: 'nobody' }, own)).toBe(false);
  });

  it('refuses bad input before any request', async () => {
    const c = client();
    proxy.clearCalls();
    const bad = [
      c.listExternalArtifacts({ namespace: NS, labelSelector: '' }),
      c.listExternalArtifacts({ namespace: NS, labelSelector: 'a=b,c=d' }),
      c.listExternalArtifacts({ namespace: NS, labelSelector: 'a=b', limit: 0 }),
      c.listExternalArtifacts({ namespace: 'Bad_NS', labelSelector: 'a=b' }),
      c.mayApplyExternalArtifacts({ namespace: NS, name: 'Bad_SA' }, NS),
      c.mayApplyExternalArtifacts({ namespace: NS, name: 'sa' }, ''),
      c.deleteExternalArtifact({ namespace: 'Bad', name: 'x' }, { uid: 'u', resourceVersion: '1' }),
      c.deleteExternalArtifact({ namespace: NS, name: 'x' }, { uid: '', resourceVersion: '1' }),
    ];
    for (const p of bad) expect(await kindOf(p)).toBe('Invalid');
    expect(proxy.calls).toHaveLength(0);
  });
});
