// A tenant of a multi-tenant cluster: a ServiceAccount that may only create, read and change
// ArtifactGenerators and ExternalArtifacts (and their status) in its own namespace, nothing else.
// The trust suites act as this tenant to shape what the functions see (a forged owner reference, a
// pinned ExternalArtifact), so that the API server's RBAC, not the test, decides what a tenant
// can do. The identity is made once per namespace by the admin (idempotent: a second call in the
// same process returns the first token; another process finds the objects made and asks a token
// of its own).

import * as k8s from '@kubernetes/client-node';
import { ensureNamespace, requestToken, withToken } from '../setup/cluster-rbac.js';
import { testKubeConfig } from './apiserver.js';
import type { K8sObject } from './manifests.js';

/** The ServiceAccount (and Role, RoleBinding) name of a tenant in its namespace. */
export const TENANT_NAME = 'tenant';

/** What a tenant may do in its own namespace: AGs and ExternalArtifacts, nothing else. */
export const TENANT_RULES = [
  {
    apiGroups: ['source.extensions.fluxcd.io'],
    resources: ['artifactgenerators', 'artifactgenerators/status'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
  },
  {
    apiGroups: ['source.toolkit.fluxcd.io'],
    resources: ['externalartifacts', 'externalartifacts/status'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
  },
] as const;

/** The objects that make `namespace`'s tenant (ServiceAccount, Role, RoleBinding). */
export function tenantObjects(namespace: string): K8sObject[] {
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: TENANT_NAME, namespace } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: TENANT_NAME, namespace },
      rules: TENANT_RULES.map((r) => ({ ...r })),
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: TENANT_NAME, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: TENANT_NAME },
      subjects: [{ kind: 'ServiceAccount', name: TENANT_NAME, namespace }],
    },
  ];
}

const tokens = new Map<string, Promise<string>>();

async function makeTenant(namespace: string): Promise<string> {
  const admin = testKubeConfig();
  await ensureNamespace(admin, namespace);
  const api = k8s.KubernetesObjectApi.makeApiClient(admin);
  for (const o of tenantObjects(namespace)) {
    // Another test file (another worker) may have made the same tenant: 409 is the same identity.
    await api.create(o as k8s.KubernetesObject).catch((e: unknown) => {
      if (!(e instanceof k8s.ApiException && e.code === 409)) throw e;
    });
  }
  return requestToken(admin, TENANT_NAME, namespace);
}

/**
 * The test cluster as `namespace`'s tenant (the namespace and the identity made on first use).
 * A failure is not cached: the next call tries again.
 */
export async function tenantKubeConfig(namespace: string): Promise<k8s.KubeConfig> {
  let token = tokens.get(namespace);
  if (token === undefined) {
    token = makeTenant(namespace);
    tokens.set(namespace, token);
    token.catch(() => tokens.delete(namespace));
  }
  return withToken(testKubeConfig(), await token, `tenant-${namespace}`);
}
