// Who a function under test is: its own ServiceAccount's token (TokenRequest, made by the global
// setup from the RBAC rendered from knative/), never the admin. Every place that builds a
// function's Kubernetes client goes through here, so RBAC is enforced by the API server: a call
// the shipped rules do not allow is a 403 and fails the test. Fixtures and assertions stay admin.
//
// detect's Role allows get/patch/delete only on the alarm PingSource named in its config
// (ALARM_NAME, `recovery-alarm`; knative/functions/detect/rbac.yaml says to keep the two in step). A
// test that gives detect another ALARM_NAME gets an identity of its own: a ServiceAccount bound
// to the same ClusterRoles and to a copy of the rendered Role with that name in resourceNames,
// i.e. the RBAC the package renders for that config.

import { createHash } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import {
  createObjects,
  identityObjects,
  requestToken,
  withToken,
  type ServiceAccountName,
} from '../setup/cluster-rbac.js';
import { RECOVERY_NAMESPACE, type K8sObject } from './manifests.js';

export { withToken, type ServiceAccountName } from '../setup/cluster-rbac.js';

// vitest is loaded only inside a vitest worker (whose state its inject() reads): `npm start --
// --kubeconfig` reaches this module through the functions room and must run without vitest.
const vitest = '__vitest_worker__' in globalThis ? await import('vitest') : undefined;

/** The alarm name of the shipped config (knative/base/config.env). */
export const SHIPPED_ALARM_NAME = 'recovery-alarm';

/** The function names that call the API server; dead-letter holds no token. */
export function isServiceAccountName(name: string): name is ServiceAccountName {
  return (
    name === 'detect' ||
    name === 'force-drift' ||
    name === 'surface-stalled' ||
    name === 'apiserversource' ||
    name === 'heal-external-artifacts'
  );
}

/** The token of a shipped ServiceAccount (made by the global setup). */
export function serviceAccountToken(sa: ServiceAccountName): string {
  if (vitest === undefined) {
    throw new Error(
      `no token for ServiceAccount ${sa}: test identities exist only inside a vitest run (npm start -- --kubeconfig uses the kubeconfig as given)`,
    );
  }
  const tokens = vitest.inject('serviceAccountTokens');
  const token = tokens?.[sa];
  if (token === undefined || token === '') {
    throw new Error(
      `no token for ServiceAccount ${sa}: the global setup (test/setup/apiserver-global-setup.ts) did not run`,
    );
  }
  return token;
}

/**
 * `kc` (a cluster: the proxy or the API server) seen as function `name`'s ServiceAccount. Throws
 * for a config whose ALARM_NAME the shipped Role does not cover: use functionKubeConfigFor then.
 */
export function asFunction(
  kc: k8s.KubeConfig,
  name: string,
  env: Readonly<Record<string, string>> = {},
): k8s.KubeConfig {
  if (!isServiceAccountName(name)) throw new Error(`no ServiceAccount for function ${name}`);
  const alarm = env['ALARM_NAME'];
  if (name === 'detect' && alarm !== undefined && alarm !== SHIPPED_ALARM_NAME) {
    throw new Error(
      `detect with ALARM_NAME=${alarm}: the shipped Role names ${SHIPPED_ALARM_NAME}; use functionKubeConfigFor`,
    );
  }
  return withToken(kc, serviceAccountToken(name), name);
}

/** Whether the kubeconfig's current user brings a credential of its own. */
export function hasOwnCredentials(kc: k8s.KubeConfig): boolean {
  const user = kc.getCurrentUser();
  if (user === null) return false;
  return [
    user.token,
    user.certData,
    user.certFile,
    user.keyData,
    user.keyFile,
    user.username,
    user.password,
    user.exec,
    user.authProvider,
  ].some((v) => v !== undefined && v !== null && v !== '');
}

/** Like asFunction, and for detect with its own ALARM_NAME: an identity rendered for that name. */
export async function functionKubeConfigFor(
  kc: k8s.KubeConfig,
  name: string,
  env: Readonly<Record<string, string>> = {},
): Promise<k8s.KubeConfig> {
  const alarm = env['ALARM_NAME'];
  if (name === 'detect' && alarm !== undefined && alarm !== SHIPPED_ALARM_NAME) {
    return withToken(kc, await detectTokenForAlarm(alarm), `detect-${alarm}`);
  }
  return asFunction(kc, name, env);
}

const alarmIdentities = new Map<string, Promise<string>>();

/** A token of a ServiceAccount holding detect's rendered RBAC with `alarm` as the alarm's name. */
export function detectTokenForAlarm(alarm: string): Promise<string> {
  let token = alarmIdentities.get(alarm);
  if (token === undefined) {
    token = createDetectIdentity(alarm);
    alarmIdentities.set(alarm, token);
  }
  return token;
}

async function createDetectIdentity(alarm: string): Promise<string> {
  // Loaded here, not above: apiserver.ts loads vitest (see `vitest` above).
  const { testKubeConfig } = await import('./apiserver.js');
  const admin = testKubeConfig();
  const suffix = createHash('sha256').update(alarm).digest('hex').slice(0, 10);
  const sa = `detect-${suffix}`;
  const objects = identityObjects();
  const derived: K8sObject[] = [
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: sa, namespace: RECOVERY_NAMESPACE },
    },
  ];
  for (const binding of objects) {
    if (binding.kind !== 'ClusterRoleBinding' && binding.kind !== 'RoleBinding') continue;
    const subjects = (binding['subjects'] ?? []) as { kind?: string; name?: string }[];
    if (!subjects.some((s) => s.kind === 'ServiceAccount' && s.name === 'detect')) continue;
    const roleRef = binding['roleRef'] as { kind: string; name: string; apiGroup: string };
    let roleName = roleRef.name;
    if (roleRef.kind === 'Role') {
      const role = objects.find(
        (o) =>
          o.kind === 'Role' &&
          o.metadata.name === roleRef.name &&
          o.metadata.namespace === binding.metadata.namespace,
      );
      if (role === undefined) throw new Error(`RoleBinding ${binding.metadata.name}: no Role`);
      roleName = `${role.metadata.name}-${suffix}`;
      const rules = ((role['rules'] ?? []) as Record<string, unknown>[]).map((rule) => {
        const names = rule['resourceNames'];
        if (!Array.isArray(names)) return rule;
        return {
          ...rule,
          resourceNames: names.map((n) => (n === SHIPPED_ALARM_NAME ? alarm : n)),
        };
      });
      derived.push({
        apiVersion: role.apiVersion,
        kind: 'Role',
        metadata: { name: roleName, namespace: role.metadata.namespace ?? RECOVERY_NAMESPACE },
        rules,
      });
    }
    derived.push({
      apiVersion: binding.apiVersion,
      kind: binding.kind,
      metadata: {
        name: `${binding.metadata.name}-${suffix}`,
        ...(binding.metadata.namespace === undefined
          ? {}
          : { namespace: binding.metadata.namespace }),
      },
      roleRef: { ...roleRef, name: roleName },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace: RECOVERY_NAMESPACE }],
    });
  }
  await createObjects(admin, derived);
  return requestToken(admin, sa);
}
