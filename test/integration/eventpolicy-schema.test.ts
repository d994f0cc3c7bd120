// The Broker's EventPolicy of knative/components/sender-auth (docs/adr/0056) against the real
// Knative Eventing v1.20 EventPolicy CRD (test/third_party/crds/) on the test kube-apiserver:
// created as rendered, every field is kept (a misspelt one would be pruned: the CRD's schema is
// structural and keeps no unknown field), and a value of the wrong type is refused.

import { afterAll, describe, expect, it } from 'vitest';
import * as k8s from '@kubernetes/client-node';
import { testKubeConfig } from '../support/apiserver.js';
import { findObject, renderKustomize, RECOVERY_NAMESPACE } from '../support/manifests.js';

const kc = testKubeConfig();
const api = kc.makeApiClient(k8s.CustomObjectsApi);
const target = {
  group: 'eventing.knative.dev',
  version: 'v1alpha1',
  namespace: RECOVERY_NAMESPACE,
  plural: 'eventpolicies',
};
const created: string[] = [];

afterAll(async () => {
  for (const name of created) {
    await api.deleteNamespacedCustomObject({ ...target, name }).catch(() => undefined);
  }
});

async function createPolicy(name: string, spec: unknown): Promise<{ spec?: unknown }> {
  const body = {
    apiVersion: 'eventing.knative.dev/v1alpha1',
    kind: 'EventPolicy',
    metadata: { name, namespace: RECOVERY_NAMESPACE },
    spec,
  };
  const answer = (await api.createNamespacedCustomObject({ ...target, body })) as {
    spec?: unknown;
  };
  created.push(name);
  return answer;
}

describe('EventPolicy broker-senders', () => {
  const rendered = findObject(
    renderKustomize('knative/overlays/sender-auth'),
    'EventPolicy',
    'broker-senders',
  );

  it('is stored exactly as rendered', async () => {
    const stored = await createPolicy('broker-senders-schema', rendered.spec);
    expect(stored.spec).toEqual(rendered.spec);
    const read = (await api.getNamespacedCustomObject({
      ...target,
      name: 'broker-senders-schema',
    })) as { spec?: unknown };
    expect(read.spec).toEqual(rendered.spec);
  });

  it('the schema would show a misspelt field: it is pruned', async () => {
    const stored = await createPolicy('broker-senders-typo', {
      to: [{ ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default' } }],
      from: [{ subject: 'system:serviceaccount:x:y' }],
    });
    expect((stored.spec as { from: unknown[] }).from).toEqual([{}]);
  });

  it('refuses a sub that is not a string', async () => {
    await expect(
      createPolicy('broker-senders-badtype', { from: [{ sub: 42 }] }),
    ).rejects.toMatchObject({ code: 422 });
  });
});
