// The product's identities on the test cluster, exactly as the deployment package grants them:
// the Namespace, ServiceAccounts, (Cluster)Roles and (Cluster)RoleBindings rendered from knative/
// (`kubectl kustomize`), created as the admin, and a TokenRequest token per ServiceAccount. Each
// function under test then calls the API server with its own token, and RBAC is enforced by the
// real kube-apiserver: a missing rule is a 403 (docs/adr/0032-rbac-enforced-in-tests.md).
//
// SWR_KNATIVE_DIR names another deployment package to take the RBAC from (default knative/); the
// rule-removal check (test/rbac-rules/run.ts) points it at a copy with one rule removed.

import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import {
  KNATIVE_DIR,
  RECOVERY_NAMESPACE,
  REPO_ROOT,
  renderKustomize,
  type K8sObject,
} from '../support/manifests.js';

/** The ServiceAccounts that call the API server, each with its own token. */
export const SERVICE_ACCOUNTS = [
  'detect',
  'force-drift',
  'surface-stalled',
  'apiserversource',
  'heal-external-artifacts',
] as const;
export type ServiceAccountName = (typeof SERVICE_ACCOUNTS)[number];
export type ServiceAccountTokens = Readonly<Record<ServiceAccountName, string>>;

/** Kinds that make up the identities; everything else in the package is not installed here. */
export const IDENTITY_KINDS = [
  'Namespace',
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
] as const;

/** Namespaces the suites and `npm start` create objects in before anything else would. */
export const WORKLOAD_NAMESPACES = ['cozy-system', 'flux-apps'] as const;

/** A day: longer than any run; the API server accepts it (no --service-account-max-token-expiration). */
const TOKEN_SECONDS = 24 * 60 * 60;

export const KNATIVE_DIR_ENV = 'SWR_KNATIVE_DIR';
/**
 * `npm run test:rbac-rules`: JSON {kind, name, namespace, index} of one rendered Role/ClusterRole
 * rule to leave out of the installed RBAC.
 */
export const DROP_RULE_ENV = 'SWR_RBAC_DROP_RULE';

function dropRule(objects: K8sObject[]): K8sObject[] {
  const raw = process.env[DROP_RULE_ENV];
  if (raw === undefined || raw === '') return objects;
  const d = JSON.parse(raw) as { kind: string; name: string; namespace: string; index: number };
  const target = objects.find(
    (o) =>
      o.kind === d.kind &&
      o.metadata.name === d.name &&
      (o.metadata.namespace ?? '') === d.namespace,
  ) as (K8sObject & { rules?: unknown[] }) | undefined;
  if (target?.rules?.[d.index] === undefined) {
    throw new Error(`${DROP_RULE_ENV}: no rule ${d.index} in ${d.kind} ${d.namespace}/${d.name}`);
  }
  target.rules = target.rules.filter((_, i) => i !== d.index);
  return objects;
}

/** The deployment package whose RBAC the test cluster installs. */
export function rbacSourceDir(): string {
  const override = process.env[KNATIVE_DIR_ENV];
  return override === undefined || override === ''
    ? KNATIVE_DIR
    : path.resolve(REPO_ROOT, override);
}

/** The identity objects of the rendered package, in creation order (Namespace first). */
export function identityObjects(dir: string = rbacSourceDir()): K8sObject[] {
  const rendered = dropRule(renderKustomize(dir));
  const order = (o: K8sObject): number => IDENTITY_KINDS.indexOf(o.kind as never);
  return rendered
    .filter((o) => order(o) >= 0 && (o.apiVersion === 'v1' || o.apiVersion.startsWith('rbac.')))
    .sort((a, b) => order(a) - order(b));
}

/** Creates the objects as the admin (the cluster is fresh: an existing one is an error). */
export async function createObjects(
  kc: k8s.KubeConfig,
  objects: readonly K8sObject[],
): Promise<void> {
  const api = k8s.KubernetesObjectApi.makeApiClient(kc);
  for (const o of objects) {
    try {
      await api.create(o as k8s.KubernetesObject);
    } catch (e) {
      const code = e instanceof k8s.ApiException ? e.code : undefined;
      throw new Error(
        `creating ${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name} failed (HTTP ${code ?? '?'}): ${String((e as Error).message ?? e).slice(0, 500)}`,
        { cause: e },
      );
    }
  }
}

/** Creates a namespace; one that exists already is fine. */
export async function ensureNamespace(kc: k8s.KubeConfig, name: string): Promise<void> {
  try {
    await kc.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name } } });
  } catch (e) {
    if (!(e instanceof k8s.ApiException && e.code === 409)) throw e;
  }
}

/** A TokenRequest token for namespace/name (audience: the API server's issuer). */
export async function requestToken(
  kc: k8s.KubeConfig,
  name: string,
  namespace: string = RECOVERY_NAMESPACE,
): Promise<string> {
  const answer = await kc.makeApiClient(k8s.CoreV1Api).createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: TOKEN_SECONDS } },
  });
  const token = answer.status?.token;
  if (token === undefined || token === '') {
    throw new Error(`TokenRequest for ${namespace}/${name} returned no token`);
  }
  return token;
}

/**
 * Installs the identities rendered from the deployment package and the workload namespaces, and
 * returns a token for each ServiceAccount that calls the API server.
 */
export async function installIdentities(
  kc: k8s.KubeConfig,
  dir: string = rbacSourceDir(),
): Promise<ServiceAccountTokens> {
  const objects = identityObjects(dir);
  const accounts = objects.filter((o) => o.kind === 'ServiceAccount').map((o) => o.metadata.name);
  for (const sa of SERVICE_ACCOUNTS) {
    if (!accounts.includes(sa)) {
      throw new Error(`${dir}: renders no ServiceAccount ${sa} (found: ${accounts.join(', ')})`);
    }
  }
  await createObjects(kc, objects);
  for (const ns of WORKLOAD_NAMESPACES) await ensureNamespace(kc, ns);
  const tokens = {} as Record<ServiceAccountName, string>;
  for (const sa of SERVICE_ACCOUNTS) tokens[sa] = await requestToken(kc, sa);
  return tokens;
}

/**
 * A KubeConfig for the same cluster as `base` (server, CA, TLS settings) that authenticates with
 * `token` only: no client certificate, no other credential.
 */
export function withToken(
  base: k8s.KubeConfig,
  token: string,
  user = 'service-account',
): k8s.KubeConfig {
  const cluster = base.getCurrentCluster();
  if (cluster === null) throw new Error('withToken: the base kubeconfig has no current cluster');
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...cluster, name: 'cluster' }],
    users: [{ name: user, token }],
    contexts: [{ name: 'ctx', cluster: 'cluster', user }],
    currentContext: 'ctx',
  });
  return kc;
}
