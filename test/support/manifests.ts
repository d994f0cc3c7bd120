// Reading the Knative deployment package in knative/ from tests: render it with kustomize, or load
// the plain resources of a kustomization without kubectl (the one reader the Knative emulation's
// Triggers come from, harness/knative/manifests.ts); pick out the RBAC rules a ServiceAccount
// holds; decide whether a rule set allows one API request (Kubernetes RBAC semantics, pure).

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const KNATIVE_DIR = path.join(REPO_ROOT, 'knative');
export const RECOVERY_NAMESPACE = 'source-watcher-recovery';

/** A Kubernetes object as it appears in a manifest. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [field: string]: unknown;
}

// ---------------------------------------------------------------------------------------------
// YAML and kustomize

/** Parses a multi-document YAML text into objects; empty documents are skipped. */
export function parseManifests(text: string, origin: string): K8sObject[] {
  const objects: K8sObject[] = [];
  for (const [index, doc] of parseAllDocuments(text).entries()) {
    if (doc.errors.length > 0) {
      throw new Error(`${origin}: YAML document ${index + 1}: ${doc.errors[0]?.message ?? ''}`);
    }
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    objects.push(asK8sObject(value, `${origin}: document ${index + 1}`));
  }
  return objects;
}

function asK8sObject(value: unknown, where: string): K8sObject {
  if (!isRecord(value)) throw new Error(`${where}: expected a mapping, got ${typeName(value)}`);
  const { apiVersion, kind, metadata } = value;
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') {
    throw new Error(`${where}: apiVersion and kind must be strings`);
  }
  if (!isRecord(metadata) || typeof metadata.name !== 'string' || metadata.name === '') {
    throw new Error(`${where}: ${kind} without metadata.name`);
  }
  return value as K8sObject;
}

/** The kubectl binary the tests use: $KUBECTL, else `kubectl` on PATH. */
export function kubectlBinary(): string {
  return process.env.KUBECTL ?? 'kubectl';
}

const renderCache = new Map<string, K8sObject[]>();

/**
 * `kubectl kustomize <dir>`, parsed. Throws (so the calling test FAILS, never skips) when kubectl
 * is missing or kustomize rejects the directory. Cached per directory for the test run.
 */
export function renderKustomize(dir: string): K8sObject[] {
  const abs = path.resolve(REPO_ROOT, dir);
  const cached = renderCache.get(abs);
  if (cached !== undefined) return cached;
  const bin = kubectlBinary();
  let out: string;
  try {
    out = execFileSync(bin, ['kustomize', abs], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: string | Buffer };
    if (err.code === 'ENOENT') {
      throw new Error(
        `kubectl not found (tried "${bin}"): the manifest tests need kubectl to render knative/ ` +
          `with kustomize. Install kubectl or set KUBECTL to its path.`,
        { cause: e },
      );
    }
    const stderr = String(err.stderr ?? '').trim();
    throw new Error(`"${bin} kustomize ${abs}" failed: ${stderr || err.message}`, { cause: e });
  }
  const objects = parseManifests(out, `kustomize ${path.relative(REPO_ROOT, abs) || '.'}`);
  renderCache.set(abs, objects);
  return objects;
}

/**
 * The resources a kustomization lists, read as plain files and followed into sub-kustomizations,
 * WITHOUT kustomize (no patches, images, labels or kustomization `namespace:` applied: knative/
 * names every object's namespace). Enough for Triggers and RBAC, which no transformer of ours
 * changes; unit/manifests/render.test.ts checks that against the real render.
 */
export function loadKustomizationResources(dir: string = KNATIVE_DIR): K8sObject[] {
  const abs = path.resolve(REPO_ROOT, dir);
  const file = path.join(abs, 'kustomization.yaml');
  if (!existsSync(file)) throw new Error(`${abs}: no kustomization.yaml`);
  const [kustomization] = parseAllDocuments(readFileSync(file, 'utf8')).map(
    (d) => d.toJS() as unknown,
  );
  if (!isRecord(kustomization)) throw new Error(`${file}: not a mapping`);
  const resources = kustomization.resources ?? [];
  if (!Array.isArray(resources) || !resources.every((r) => typeof r === 'string')) {
    throw new Error(`${file}: resources must be a list of paths`);
  }
  const objects: K8sObject[] = [];
  for (const entry of resources) {
    const target = path.resolve(abs, entry);
    if (!existsSync(target)) throw new Error(`${file}: resource ${entry} does not exist`);
    if (statSync(target).isDirectory()) {
      objects.push(...loadKustomizationResources(target));
    } else {
      objects.push(...parseManifests(readFileSync(target, 'utf8'), target));
    }
  }
  // Components add their own resources (each knative/functions/<name> brings its function's
  // objects; components/names only rewrites names, which it leaves at their defaults).
  const components = kustomization.components ?? [];
  if (!Array.isArray(components) || !components.every((c) => typeof c === 'string')) {
    throw new Error(`${file}: components must be a list of paths`);
  }
  for (const entry of components) {
    const target = path.resolve(abs, entry);
    if (!existsSync(target)) throw new Error(`${file}: component ${entry} does not exist`);
    objects.push(...loadKustomizationResources(target));
  }
  return objects;
}

export function objectsOfKind(objects: readonly K8sObject[], kind: string): K8sObject[] {
  return objects.filter((o) => o.kind === kind);
}

/** The one object of that kind and name (and apiVersion group, when given), or a clear error. */
export function findObject(
  objects: readonly K8sObject[],
  kind: string,
  name: string,
  apiGroup?: string,
): K8sObject {
  const found = objects.filter(
    (o) =>
      o.kind === kind &&
      o.metadata.name === name &&
      (apiGroup === undefined || groupOf(o.apiVersion) === apiGroup),
  );
  if (found.length !== 1) {
    throw new Error(`expected exactly one ${kind} "${name}", found ${found.length}`);
  }
  return found[0] as K8sObject;
}

export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

// ---------------------------------------------------------------------------------------------
// RBAC

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  /** When present and non-empty, only these object names. */
  resourceNames?: string[];
  /** Set for rules granted through a RoleBinding: they apply only in this namespace. */
  namespace?: string;
  /** Where the rule comes from, for messages: "ClusterRole/name" or "Role/ns/name". */
  from?: string;
}

export interface ApiRequest {
  verb: string;
  /** API group; '' is the core group. */
  group: string;
  /** Plural resource, e.g. artifactgenerators. */
  resource: string;
  /** e.g. status. */
  subresource?: string | undefined;
  /** Absent or '' for cluster-scoped resources and all-namespace list/watch. */
  namespace?: string | undefined;
  /** The object name, when the request names one (get, patch, delete, update). */
  name?: string | undefined;
}

/**
 * The RBAC rules ServiceAccount `<namespace>/<serviceAccount>` holds through the (Cluster)Role
 * bindings in the objects (default: knative/ read without kubectl). A binding to a role that is
 * not in the objects is an error.
 */
export function loadRbacRules(
  serviceAccount: string,
  objects: readonly K8sObject[] = loadKustomizationResources(),
  namespace: string = RECOVERY_NAMESPACE,
): PolicyRule[] {
  const rules: PolicyRule[] = [];
  for (const binding of objects) {
    if (binding.kind !== 'ClusterRoleBinding' && binding.kind !== 'RoleBinding') continue;
    const bindingNs = binding.kind === 'RoleBinding' ? binding.metadata.namespace : undefined;
    if (binding.kind === 'RoleBinding' && (bindingNs === undefined || bindingNs === '')) {
      throw new Error(`RoleBinding ${binding.metadata.name} has no namespace`);
    }
    const subjects = binding.subjects;
    if (!Array.isArray(subjects)) continue;
    const matches = subjects.some(
      (s) =>
        isRecord(s) &&
        s.kind === 'ServiceAccount' &&
        s.name === serviceAccount &&
        (s.namespace ?? bindingNs) === namespace,
    );
    if (!matches) continue;
    const roleRef = record(binding.roleRef, `${binding.kind} ${binding.metadata.name}: roleRef`);
    const roleKind = roleRef.kind;
    const roleName = roleRef.name;
    if ((roleKind !== 'ClusterRole' && roleKind !== 'Role') || typeof roleName !== 'string') {
      throw new Error(`${binding.kind} ${binding.metadata.name}: bad roleRef`);
    }
    if (binding.kind === 'ClusterRoleBinding' && roleKind === 'Role') {
      throw new Error(`ClusterRoleBinding ${binding.metadata.name} cannot bind a Role`);
    }
    const role = objects.find(
      (o) =>
        o.kind === roleKind &&
        o.metadata.name === roleName &&
        (roleKind === 'ClusterRole' || o.metadata.namespace === bindingNs),
    );
    if (role === undefined) {
      throw new Error(
        `${binding.kind} ${binding.metadata.name} binds missing ${roleKind} ${roleName}`,
      );
    }
    const from =
      roleKind === 'Role' ? `Role/${bindingNs ?? ''}/${roleName}` : `ClusterRole/${roleName}`;
    for (const [i, raw] of (Array.isArray(role.rules) ? role.rules : []).entries()) {
      rules.push(toPolicyRule(raw, `${from} rule ${i + 1}`, from, bindingNs));
    }
  }
  return rules;
}

function toPolicyRule(
  raw: unknown,
  where: string,
  from: string,
  ns: string | undefined,
): PolicyRule {
  const r = record(raw, where);
  const list = (key: string): string[] => {
    const v = r[key] ?? [];
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) {
      throw new Error(`${where}: ${key} must be a list of strings`);
    }
    return v;
  };
  const rule: PolicyRule = {
    apiGroups: list('apiGroups'),
    resources: list('resources'),
    verbs: list('verbs'),
    from,
  };
  const names = list('resourceNames');
  if (names.length > 0) rule.resourceNames = names;
  if (ns !== undefined) rule.namespace = ns;
  return rule;
}

/**
 * Whether any rule allows the request, as the Kubernetes RBAC authorizer decides it. A rule's own
 * `namespace` (from loadRbacRules) scopes it; `roleNamespace` scopes the rules that have none
 * (pass it for the rules of one Role); rules with neither are cluster-wide.
 */
export function ruleAllows(
  rules: readonly PolicyRule[],
  request: ApiRequest,
  roleNamespace?: string,
): boolean {
  return rulesAllowing(rules, request, roleNamespace).length > 0;
}

/** The rules that allow the request (empty when none does). Same semantics as ruleAllows. */
export function rulesAllowing(
  rules: readonly PolicyRule[],
  request: ApiRequest,
  roleNamespace?: string,
): PolicyRule[] {
  validateRequest(request);
  return rules.filter((rule) => singleRuleAllows(rule, request, rule.namespace ?? roleNamespace));
}

function validateRequest(request: ApiRequest): void {
  const problems: string[] = [];
  if (typeof request.verb !== 'string' || request.verb === '') problems.push('verb is empty');
  if (typeof request.group !== 'string') problems.push('group must be a string (core is "")');
  if (typeof request.resource !== 'string' || request.resource === '') {
    problems.push('resource is empty');
  } else if (request.resource.includes('/')) {
    problems.push('resource must not contain "/": put the subresource in `subresource`');
  }
  if (request.subresource === '') problems.push('subresource is empty: omit it instead');
  if (problems.length > 0) {
    throw new Error(`invalid API request ${JSON.stringify(request)}: ${problems.join('; ')}`);
  }
}

function singleRuleAllows(rule: PolicyRule, req: ApiRequest, scope: string | undefined): boolean {
  if (scope !== undefined && scope !== '') {
    // Granted through a RoleBinding: only inside that namespace, never cluster-scoped.
    if (req.namespace === undefined || req.namespace !== scope) return false;
  }
  if (!rule.verbs.some((v) => v === '*' || v === req.verb)) return false;
  if (!rule.apiGroups.some((g) => g === '*' || g === req.group)) return false;
  const combined =
    req.subresource === undefined ? req.resource : `${req.resource}/${req.subresource}`;
  const resourceOk = rule.resources.some(
    (r) =>
      r === '*' ||
      r === combined ||
      (req.subresource !== undefined && r === `*/${req.subresource}`),
  );
  if (!resourceOk) return false;
  if (rule.resourceNames !== undefined && rule.resourceNames.length > 0) {
    return req.name !== undefined && rule.resourceNames.includes(req.name);
  }
  return true;
}

// ---------------------------------------------------------------------------------------------

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The value as a mapping, or an error that says where. */
export function record(v: unknown, where: string): Record<string, unknown> {
  if (!isRecord(v)) throw new Error(`${where}: expected a mapping, got ${typeName(v)}`);
  return v;
}

function typeName(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v;
}

/** The label kustomize's generator puts on recovery-config (knative/base/kustomization.yaml). */
export const RECOVERY_CONFIG_LABEL = 'source-watcher-recovery.cozystack.io/config';

/** recovery-config in a render: its name carries a hash of its content (docs/adr/0064). */
export function isRecoveryConfig(o: K8sObject): boolean {
  return o.kind === 'ConfigMap' && o.metadata.labels?.[RECOVERY_CONFIG_LABEL] === 'recovery';
}

/** The one recovery-config of a render; throws when there is none or more than one. */
export function findRecoveryConfig(
  objects: readonly K8sObject[],
): K8sObject & { data: Record<string, string> } {
  const found = objects.filter(isRecoveryConfig);
  if (found.length !== 1) throw new Error(`expected one recovery-config, found ${found.length}`);
  return found[0] as K8sObject & { data: Record<string, string> };
}
