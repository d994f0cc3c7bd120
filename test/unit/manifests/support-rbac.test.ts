// test/support/manifests.ts itself: the RBAC decision (pure, Kubernetes semantics), the RBAC
// loader on hand-made objects and the YAML reader. The Trigger conversion the Knative emulation
// routes by is tested in unit/harness/knative-manifests.test.ts.

import { describe, expect, it } from 'vitest';
import {
  loadRbacRules,
  parseManifests,
  ruleAllows,
  rulesAllowing,
  type ApiRequest,
  type K8sObject,
  type PolicyRule,
} from '../../support/manifests.js';

const rule = (r: Partial<PolicyRule> = {}): PolicyRule => ({
  apiGroups: ['g.example'],
  resources: ['widgets'],
  verbs: ['get'],
  ...r,
});
const req = (r: Partial<ApiRequest> = {}): ApiRequest => ({
  verb: 'get',
  group: 'g.example',
  resource: 'widgets',
  namespace: 'ns1',
  name: 'w1',
  ...r,
});

describe('ruleAllows', () => {
  it.each<[string, PolicyRule[], ApiRequest, boolean, string?]>([
    ['exact match', [rule()], req(), true],
    ['no rules', [], req(), false],
    ['other verb', [rule()], req({ verb: 'patch' }), false],
    ['verb wildcard', [rule({ verbs: ['*'] })], req({ verb: 'delete' }), true],
    ['verb in a list', [rule({ verbs: ['list', 'get'] })], req(), true],
    ['other group', [rule()], req({ group: 'other.example' }), false],
    ['group wildcard', [rule({ apiGroups: ['*'] })], req({ group: 'x' }), true],
    ['core group is ""', [rule({ apiGroups: [''] })], req({ group: '' }), true],
    ['core rule, named group', [rule({ apiGroups: [''] })], req(), false],
    ['other resource', [rule()], req({ resource: 'gadgets' }), false],
    ['resource wildcard', [rule({ resources: ['*'] })], req({ subresource: 'status' }), true],
    ['resource does not cover its status', [rule()], req({ subresource: 'status' }), false],
    [
      'status rule',
      [rule({ resources: ['widgets/status'] })],
      req({ subresource: 'status' }),
      true,
    ],
    ['status rule is not the resource', [rule({ resources: ['widgets/status'] })], req(), false],
    ['*/status', [rule({ resources: ['*/status'] })], req({ subresource: 'status' }), true],
    [
      '*/status is not */scale',
      [rule({ resources: ['*/status'] })],
      req({ subresource: 'scale' }),
      false,
    ],
    ['resourceNames match', [rule({ resourceNames: ['w1'] })], req(), true],
    ['resourceNames other name', [rule({ resourceNames: ['w2'] })], req(), false],
    [
      'resourceNames, request without name',
      [rule({ resourceNames: ['w1'] })],
      req({ name: undefined }),
      false,
    ],
    ['empty resourceNames = all', [rule({ resourceNames: [] })], req(), true],
    ['cluster-wide rule, any namespace', [rule()], req({ namespace: 'anywhere' }), true],
    ['cluster-wide rule, all namespaces', [rule()], req({ namespace: '' }), true],
    ['cluster-wide rule, cluster-scoped', [rule()], req({ namespace: undefined }), true],
    ['roleNamespace: same namespace', [rule()], req(), true, 'ns1'],
    ['roleNamespace: other namespace', [rule()], req({ namespace: 'ns2' }), false, 'ns1'],
    [
      'roleNamespace: all-namespace list',
      [rule({ verbs: ['list'] })],
      req({ verb: 'list', namespace: '' }),
      false,
      'ns1',
    ],
    ['roleNamespace: cluster-scoped', [rule()], req({ namespace: undefined }), false, 'ns1'],
    [
      'rule namespace wins over roleNamespace',
      [rule({ namespace: 'ns2' })],
      req({ namespace: 'ns2' }),
      true,
      'ns1',
    ],
    ['rule namespace scopes', [rule({ namespace: 'ns2' })], req(), false],
    ['second rule matches', [rule({ verbs: ['list'] }), rule()], req(), true],
  ])('%s', (_name, rules, request, allowed, roleNamespace) => {
    expect(ruleAllows(rules, request, roleNamespace)).toBe(allowed);
  });

  it('rulesAllowing names the rules that grant a request', () => {
    const a = rule({ verbs: ['get'], from: 'a' });
    const b = rule({ verbs: ['*'], from: 'b' });
    const c = rule({ verbs: ['list'], from: 'c' });
    expect(rulesAllowing([a, b, c], req()).map((r) => r.from)).toEqual(['a', 'b']);
  });

  it.each<[string, ApiRequest]>([
    ['empty verb', req({ verb: '' })],
    ['empty resource', req({ resource: '' })],
    ['resource with a slash', req({ resource: 'widgets/status' })],
    ['empty subresource', req({ subresource: '' })],
  ])('rejects a malformed request: %s', (_name, request) => {
    expect(() => ruleAllows([rule({ verbs: ['*'], resources: ['*'] })], request)).toThrow(
      /invalid API request/,
    );
  });
});

function obj(
  kind: string,
  name: string,
  rest: Record<string, unknown> = {},
  namespace?: string,
): K8sObject {
  return {
    apiVersion: kind.includes('Role') ? 'rbac.authorization.k8s.io/v1' : 'v1',
    kind,
    metadata: namespace === undefined ? { name } : { name, namespace },
    ...rest,
  };
}
const sa = (name: string, namespace = 'ns1') => ({ kind: 'ServiceAccount', name, namespace });
/** A (Cluster)Role holding one rule. */
const role = (kind: string, name: string, rule: object, namespace?: string): K8sObject =>
  obj(kind, name, { rules: [rule] }, namespace);
/** A (Cluster)RoleBinding of the role [kind, name], by default to the ServiceAccount ns1/me. */
const binding = (
  kind: string,
  name: string,
  [roleKind, roleName]: [string, string],
  namespace?: string,
  subjects: object[] = [sa('me')],
): K8sObject =>
  obj(kind, name, { roleRef: { kind: roleKind, name: roleName }, subjects }, namespace);

describe('loadRbacRules', () => {
  const objects: K8sObject[] = [
    role('ClusterRole', 'cr', { apiGroups: ['g'], resources: ['a'], verbs: ['get'] }),
    role('ClusterRole', 'cr-unused', { apiGroups: ['g'], resources: ['z'], verbs: ['*'] }),
    binding('ClusterRoleBinding', 'crb', ['ClusterRole', 'cr']),
    role(
      'Role',
      'r',
      { apiGroups: ['g'], resources: ['b'], verbs: ['patch'], resourceNames: ['x'] },
      'ns1',
    ),
    binding('RoleBinding', 'rb', ['Role', 'r'], 'ns1', [{ kind: 'ServiceAccount', name: 'me' }]),
    binding('RoleBinding', 'rb-cr', ['ClusterRole', 'cr-unused'], 'ns2'),
    binding('ClusterRoleBinding', 'other-ns', ['ClusterRole', 'cr-unused'], undefined, [
      sa('me', 'elsewhere'),
    ]),
  ];

  it('collects cluster-wide and namespaced rules, scoped by binding', () => {
    expect(loadRbacRules('me', objects, 'ns1')).toEqual([
      { apiGroups: ['g'], resources: ['a'], verbs: ['get'], from: 'ClusterRole/cr' },
      {
        apiGroups: ['g'],
        resources: ['b'],
        verbs: ['patch'],
        resourceNames: ['x'],
        namespace: 'ns1',
        from: 'Role/ns1/r',
      },
      {
        apiGroups: ['g'],
        resources: ['z'],
        verbs: ['*'],
        namespace: 'ns2',
        from: 'ClusterRole/cr-unused',
      },
    ]);
  });

  it('a ClusterRole bound by a RoleBinding grants only in that namespace', () => {
    const rules = loadRbacRules('me', objects, 'ns1');
    const z = { verb: 'delete', group: 'g', resource: 'z', name: 'q' };
    expect(ruleAllows(rules, { ...z, namespace: 'ns2' })).toBe(true);
    expect(ruleAllows(rules, { ...z, namespace: 'ns1' })).toBe(false);
  });

  it('an account with no binding holds nothing', () => {
    expect(loadRbacRules('nobody', objects, 'ns1')).toEqual([]);
  });

  it.each<[string, K8sObject[], RegExp]>([
    [
      'a binding to a missing role',
      [binding('ClusterRoleBinding', 'b', ['ClusterRole', 'gone'])],
      /missing ClusterRole gone/,
    ],
    [
      'a ClusterRoleBinding to a Role',
      [binding('ClusterRoleBinding', 'b', ['Role', 'r'])],
      /cannot bind a Role/,
    ],
    [
      'a RoleBinding without namespace',
      [binding('RoleBinding', 'b', ['Role', 'r'])],
      /has no namespace/,
    ],
    [
      'a rule with a non-list field',
      [
        role('ClusterRole', 'cr', { apiGroups: 'g', resources: ['a'], verbs: ['get'] }),
        binding('ClusterRoleBinding', 'b', ['ClusterRole', 'cr']),
      ],
      /apiGroups must be a list/,
    ],
  ])('rejects %s', (_name, bad, message) => {
    expect(() => loadRbacRules('me', bad, 'ns1')).toThrow(message);
  });
});

describe('parseManifests', () => {
  it('reads every document and skips empty ones', () => {
    const text =
      '---\napiVersion: v1\nkind: A\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: B\nmetadata: {name: b}\n';
    expect(parseManifests(text, 'x').map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'A/a',
      'B/b',
    ]);
  });

  it.each<[string, string, RegExp]>([
    ['broken YAML', 'kind: [unclosed', /x: YAML document 1/],
    ['a list document', '- a\n- b\n', /expected a mapping, got a list/],
    ['no kind', 'apiVersion: v1\nmetadata: {name: a}\n', /apiVersion and kind must be strings/],
    ['no name', 'apiVersion: v1\nkind: A\nmetadata: {}\n', /A without metadata.name/],
  ])('rejects %s', (_name, text, message) => {
    expect(() => parseManifests(text, 'x')).toThrow(message);
  });
});
