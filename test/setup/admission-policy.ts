// The product's ValidatingAdmissionPolicies on the test cluster, exactly as the deployment package
// ships them (knative/components/admission-policy, docs/adr/0055): the policies and their bindings
// rendered from the same package as the RBAC (SWR_KNATIVE_DIR, cluster-rbac.ts), created as the
// admin, and waited for: the API server applies a new policy only once its informer has seen the
// policy and its binding, so each policy is probed until it refuses a write, and every suite
// then runs with all of them in force.
//
// The probe is a dry-run create (nothing is stored) as the policy's ServiceAccount username with
// the system:masters group (impersonated by the admin): RBAC lets it through, so the refusal can
// only come from the policy.

import https from 'node:https';
import type * as k8s from '@kubernetes/client-node';
import { AG_API_VERSION, PS_API_VERSION } from '../../shared/core/objects/types.js';
import { makeArtifactGenerator, makePackageSource } from '../support/fixture-objects.js';
import { RECOVERY_NAMESPACE, renderKustomize, type K8sObject } from '../support/manifests.js';
import { createObjects, rbacSourceDir } from './cluster-rbac.js';
import { CONFIG_LABEL, CONFIG_POLICY_NAME } from '../../shared/core/config/policy.js';

export const POLICY_KIND = 'ValidatingAdmissionPolicy';
export const BINDING_KIND = 'ValidatingAdmissionPolicyBinding';
export const ADMISSION_API_VERSION = 'admissionregistration.k8s.io/v1';

/** How long a new policy may take to be in force before the set-up fails. */
const EFFECTIVE_WITHIN_MS = 30_000;
const PROBE_EVERY_MS = 100;

/** The policies and bindings of the rendered package, policies first. */
export function admissionPolicyObjects(dir: string = rbacSourceDir()): K8sObject[] {
  const rendered = renderKustomize(dir).filter((o) => o.apiVersion === ADMISSION_API_VERSION);
  return [
    ...rendered.filter((o) => o.kind === POLICY_KIND),
    ...rendered.filter((o) => o.kind === BINDING_KIND),
  ];
}

/**
 * The ServiceAccount username a policy's first match condition names: the policies take the
 * install namespace from their param, the install's Namespace (docs/adr/0063), so it is filled in.
 */
export function policyUsername(policy: K8sObject, namespace: string = RECOVERY_NAMESPACE): string {
  const spec = policy['spec'] as { matchConditions?: { expression?: string }[] } | undefined;
  const expression = spec?.matchConditions?.[0]?.expression ?? '';
  const m = /'system:serviceaccount:' \+ params\.metadata\.name \+ ':([a-z0-9-]+)'/.exec(
    expression,
  );
  if (m?.[1] === undefined) {
    throw new Error(
      `${POLICY_KIND} ${policy.metadata.name}: no ServiceAccount username in its match condition`,
    );
  }
  return `system:serviceaccount:${namespace}:${m[1]}`;
}

interface Probe {
  readonly path: string;
  readonly body: unknown;
  /** Who sends it, and the status of the policy's refusal. */
  readonly user: string;
  readonly refusedWith: number;
}

/**
 * The probe of the policy on recovery-config (docs/adr/0064), which matches no user but the
 * ConfigMap's label in the install namespace: a labelled ConfigMap with a bad value, as anyone.
 */
function configProbe(): Probe {
  return {
    path: `/api/v1/namespaces/${RECOVERY_NAMESPACE}/configmaps`,
    body: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: `admission-probe-${Date.now().toString(36)}`,
        labels: { [CONFIG_LABEL]: 'recovery' },
      },
      data: { RECOVERY_GRACE_PERIOD: '30x' },
    },
    user: 'admission-probe',
    refusedWith: 422,
  };
}

/** A schema-valid object the policy refuses to let its ServiceAccount create. */
function probeFor(policy: K8sObject): Probe {
  if (policy.metadata.name === CONFIG_POLICY_NAME) return configProbe();
  const user = policyUsername(policy);
  return { ...objectProbeFor(policy), user, refusedWith: 403 };
}

function objectProbeFor(policy: K8sObject): Omit<Probe, 'user' | 'refusedWith'> {
  const spec = policy['spec'] as {
    matchConstraints?: { resourceRules?: { apiGroups?: string[]; resources?: string[] }[] };
  };
  const rules = spec.matchConstraints?.resourceRules ?? [];
  const covers = (group: string, resource: string): boolean =>
    rules.some((r) => r.apiGroups?.includes(group) && r.resources?.includes(resource));
  const name = `admission-probe-${Date.now().toString(36)}`;
  if (covers('source.extensions.fluxcd.io', 'artifactgenerators')) {
    return {
      path: `/apis/${AG_API_VERSION}/namespaces/default/artifactgenerators`,
      body: makeArtifactGenerator({ name, namespace: 'default' }),
    };
  }
  if (covers('cozystack.io', 'packagesources')) {
    return { path: `/apis/${PS_API_VERSION}/packagesources`, body: makePackageSource({ name }) };
  }
  if (covers('sources.knative.dev', 'pingsources')) {
    return {
      path: '/apis/sources.knative.dev/v1/namespaces/default/pingsources',
      body: {
        apiVersion: 'sources.knative.dev/v1',
        kind: 'PingSource',
        metadata: { name, namespace: 'default' },
        spec: { schedule: '* * * * *', sink: { uri: 'http://example.invalid' } },
      },
    };
  }
  throw new Error(`${POLICY_KIND} ${policy.metadata.name}: no probe for its resources`);
}

/** One request as `user` in group system:masters; the status code and body. */
export async function asImpersonated(
  kc: k8s.KubeConfig,
  user: string,
  req: { method: string; path: string; body?: unknown; query?: string },
): Promise<{ status: number; body: string }> {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error('asImpersonated: the kubeconfig has no current cluster');
  const url = new URL(
    `${req.path}${req.query !== undefined ? `?${req.query}` : ''}`,
    cluster.server,
  );
  const opts: https.RequestOptions = {
    method: req.method,
    hostname: url.hostname,
    port: url.port,
    path: `${url.pathname}${url.search}`,
    headers: {
      'Content-Type': 'application/json',
      'Impersonate-User': user,
      'Impersonate-Group': 'system:masters',
    },
  };
  await kc.applyToHTTPSOptions(opts);
  return new Promise((resolve, reject) => {
    const r = https.request(opts, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    r.on('error', reject);
    r.setTimeout(10_000, () => r.destroy(new Error(`${req.method} ${req.path}: timed out`)));
    r.end(req.body === undefined ? undefined : JSON.stringify(req.body));
  });
}

/** Resolves once `policy` refuses its probe; throws after EFFECTIVE_WITHIN_MS. */
async function waitEffective(kc: k8s.KubeConfig, policy: K8sObject): Promise<void> {
  const probe = probeFor(policy);
  const user = probe.user;
  const deadline = Date.now() + EFFECTIVE_WITHIN_MS;
  const marker = `ValidatingAdmissionPolicy '${policy.metadata.name}'`;
  let last = '';
  while (Date.now() < deadline) {
    const answer = await asImpersonated(kc, user, {
      method: 'POST',
      path: probe.path,
      query: 'dryRun=All',
      body: probe.body,
    });
    if (answer.status === probe.refusedWith && answer.body.includes(marker)) return;
    if (answer.status !== 201 && answer.status !== 200) {
      throw new Error(
        `probing ${marker}: HTTP ${answer.status}, not the policy's refusal: ${answer.body.slice(0, 500)}`,
      );
    }
    last = `HTTP ${answer.status}`;
    await new Promise((r) => setTimeout(r, PROBE_EVERY_MS));
  }
  throw new Error(`${marker} not in force after ${EFFECTIVE_WITHIN_MS} ms (last probe: ${last})`);
}

/**
 * Creates the rendered policies and bindings and returns once every policy refuses its probe.
 * A policy the API server rejects (a CEL expression that does not compile) fails the create.
 */
export async function installAdmissionPolicies(
  kc: k8s.KubeConfig,
  dir: string = rbacSourceDir(),
): Promise<readonly string[]> {
  const objects = admissionPolicyObjects(dir);
  await createObjects(kc, objects);
  const policies = objects.filter((o) => o.kind === POLICY_KIND);
  await Promise.all(policies.map((p) => waitEffective(kc, p)));
  return policies.map((p) => p.metadata.name);
}
