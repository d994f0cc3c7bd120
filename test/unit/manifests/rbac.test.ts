// The RBAC in knative/: exactly the grants each identity needs, nothing more.

import { describe, expect, it } from 'vitest';
import {
  RECOVERY_NAMESPACE,
  findObject,
  loadRbacRules,
  objectsOfKind,
  ruleAllows,
} from '../../support/manifests.js';
import type { ApiRequest, PolicyRule } from '../../support/manifests.js';
import { base, observe, recoveryConfig } from './renders.js';

const AG = 'source.extensions.fluxcd.io';
const PS = 'cozystack.io';
const KN = 'sources.knative.dev';
const EV = 'events.k8s.io';
const SRC = 'source.toolkit.fluxcd.io';
/** The Kubernetes Events of the recovery steps (docs/adr/0033): create, and get+patch a series. */
const EVENT_GRANTS = [`* ${EV}/events create`, `* ${EV}/events get`, `* ${EV}/events patch`];
const NS = RECOVERY_NAMESPACE;
/** Sender authentication's TokenReview (docs/adr/0056), for every function with a token. */
const TOKEN_REVIEW = '* authentication.k8s.io/tokenreviews create';

/** Requests for one kind of object: the verb, and what differs from the usual object. */
const requests =
  (object: Omit<ApiRequest, 'verb'>) =>
  (verb: string, extra: Partial<ApiRequest> = {}): ApiRequest => ({ verb, ...object, ...extra });
const ag = requests({
  group: AG,
  resource: 'artifactgenerators',
  namespace: 'cozy-system',
  name: 'pkg',
});
const ping = requests({
  group: KN,
  resource: 'pingsources',
  namespace: NS,
  name: 'recovery-alarm',
});
const ps = requests({ group: PS, resource: 'packagesources', name: 'pkg' });
const ea = requests({
  group: SRC,
  resource: 'externalartifacts',
  namespace: 'cozy-system',
  name: 'a',
});
const allNs = { namespace: '' } as const;
const onStatus = { subresource: 'status' } as const;
const noName = {} as Partial<ApiRequest>;

/** One grant per (scope, group, resource, verb, names): order- and grouping-independent. */
function grants(rules: readonly PolicyRule[]): string[] {
  const out: string[] = [];
  for (const r of rules) {
    for (const g of r.apiGroups)
      for (const res of r.resources)
        for (const v of r.verbs)
          out.push(
            `${r.namespace ?? '*'} ${g}/${res} ${v}${r.resourceNames ? ` ${r.resourceNames.join(',')}` : ''}`,
          );
  }
  return out.sort();
}

/** The grants of `verbs` on a group/resource in every namespace. */
const everywhere = (resource: string, ...verbs: string[]): string[] =>
  verbs.map((verb) => `* ${resource} ${verb}`);
const AGS = `${AG}/artifactgenerators`;
const EAS = `${SRC}/externalartifacts`;

const EXPECTED_GRANTS: Record<string, string[]> = {
  detect: [
    TOKEN_REVIEW,
    ...everywhere(AGS, 'get', 'list'),
    `${NS} ${KN}/pingsources create`,
    ...['get', 'patch', 'delete'].map((verb) => `${NS} ${KN}/pingsources ${verb} recovery-alarm`),
    // The alarm's owner, for its uid (docs/adr/0067).
    `${NS} ${KN}/pingsources get resync`,
  ],
  'force-drift': [
    TOKEN_REVIEW,
    ...everywhere(AGS, 'get', 'list', 'patch'),
    `* ${AGS}/status patch`,
    `* ${PS}/packagesources get`,
    ...EVENT_GRANTS,
  ],
  'surface-stalled': [
    TOKEN_REVIEW,
    ...everywhere(AGS, 'get', 'list'),
    ...everywhere(`${PS}/packagesources`, 'get', 'list'),
    `* ${PS}/packagesources/status patch`,
    ...EVENT_GRANTS,
  ],
  apiserversource: [
    ...everywhere(AGS, 'get', 'list', 'watch'),
    // The ExternalArtifact source of functions/heal-external-artifacts.
    ...everywhere(EAS, 'get', 'list', 'watch'),
  ],
  // docs/adr/0038: get the AG and bump its requestedAt; list its ExternalArtifacts by label and
  // delete one whose status another field manager owns; the heal's Event. ADR 54: ask whether the
  // AG's spec.serviceAccountName may re-create it (a SubjectAccessReview).
  'heal-external-artifacts': [
    TOKEN_REVIEW,
    ...everywhere(AGS, 'get', 'patch'),
    ...everywhere(EAS, 'list', 'delete'),
    '* authorization.k8s.io/subjectaccessreviews create',
    ...EVENT_GRANTS,
  ],
  'dead-letter': [],
};

describe('grants per ServiceAccount', () => {
  it.each(Object.entries(EXPECTED_GRANTS))('%s holds exactly its grants', (sa, expected) => {
    expect(grants(loadRbacRules(sa, base()))).toEqual([...expected].sort());
  });

  it('the six ServiceAccounts exist and nothing else is bound', () => {
    const objects = base();
    const accounts = objectsOfKind(objects, 'ServiceAccount').map((s) => s.metadata.name);
    expect(accounts.sort()).toEqual(Object.keys(EXPECTED_GRANTS).sort());
    for (const binding of objects.filter((o) => o.kind.endsWith('RoleBinding'))) {
      for (const s of binding.subjects as { kind: string; name: string; namespace?: string }[]) {
        expect(s.kind, binding.metadata.name).toBe('ServiceAccount');
        expect(accounts, binding.metadata.name).toContain(s.name);
        expect(s.namespace ?? binding.metadata.namespace, binding.metadata.name).toBe(NS);
      }
    }
  });

  it('every (Cluster)Role is bound (no orphan grants)', () => {
    const objects = base();
    const bound = new Set(
      objects
        .filter((o) => o.kind.endsWith('RoleBinding'))
        .map((b) => {
          const ref = b.roleRef as { kind: string; name: string };
          return `${ref.kind}/${ref.name}`;
        }),
    );
    for (const role of objects.filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole')) {
      expect(bound.has(`${role.kind}/${role.metadata.name}`), role.metadata.name).toBe(true);
    }
  });

  it('dead-letter gets no API token at all', () => {
    const sa = findObject(base(), 'ServiceAccount', 'dead-letter');
    expect(sa.automountServiceAccountToken).toBe(false);
  });

  it('the alarm Role names the alarm and its owner the config names', () => {
    const objects = base();
    const data = recoveryConfig(objects);
    const named = loadRbacRules('detect', objects).flatMap((r) => r.resourceNames ?? []);
    expect(new Set(named)).toEqual(new Set([data.ALARM_NAME, data.RESYNC_PINGSOURCE]));
  });
});

describe('observe overlay: observe-only by permission too (issue 12, item 5)', () => {
  const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);
  // A TokenReview stores nothing: it is a question to the API server, not a write.
  const writes = (sa: string): string[] =>
    grants(loadRbacRules(sa, observe())).filter(
      (g) => WRITE_VERBS.has(g.split(' ')[2] ?? '') && g !== TOKEN_REVIEW,
    );

  it.each(Object.keys(EXPECTED_GRANTS))('%s: reads as in enforce mode', (sa) => {
    // surface-stalled surfaces no verdict in observe, so it writes (and reads) no Event.
    const read = (all: string[]): string[] =>
      all.filter(
        (g) =>
          (!WRITE_VERBS.has(g.split(' ')[2] ?? '') || g === TOKEN_REVIEW) &&
          !(sa === 'surface-stalled' && g.includes(`${EV}/events`)),
      );
    expect(read(grants(loadRbacRules(sa, observe())))).toEqual(
      read([...(EXPECTED_GRANTS[sa] ?? [])].sort()),
    );
  });

  it("the only writes left are detect's alarm and force-drift's would-force Events", () => {
    expect(writes('detect')).toEqual(
      [
        `${NS} ${KN}/pingsources create`,
        `${NS} ${KN}/pingsources delete recovery-alarm`,
        `${NS} ${KN}/pingsources patch recovery-alarm`,
      ].sort(),
    );
    expect(writes('force-drift')).toEqual([`* ${EV}/events create`, `* ${EV}/events patch`]);
    expect(writes('heal-external-artifacts')).toEqual([
      '* authorization.k8s.io/subjectaccessreviews create',
      `* ${EV}/events create`,
      `* ${EV}/events patch`,
    ]);
    for (const sa of ['surface-stalled', 'apiserversource', 'dead-letter']) {
      expect(writes(sa), sa).toEqual([]);
    }
  });

  it.each<[string, ApiRequest]>([
    ['force-drift', ag('patch')],
    ['force-drift', ag('patch', onStatus)],
    ['surface-stalled', ps('patch', onStatus)],
  ])('%s cannot %o', (sa, request) => {
    expect(ruleAllows(loadRbacRules(sa, observe()), request)).toBe(false);
    // ...which the enforce install does allow.
    expect(ruleAllows(loadRbacRules(sa, base()), request)).toBe(true);
  });
});

describe('what each identity can and cannot do', () => {
  it.each<[string, string, ApiRequest, boolean]>([
    ['detect', 'lists AGs in all namespaces', ag('list', { ...allNs }), true],
    ['detect', 'cannot watch AGs (it never does)', ag('watch', { ...allNs }), false],
    ['detect', 'gets an AG', ag('get'), true],
    ['detect', 'cannot patch an AG', ag('patch'), false],
    ['detect', 'cannot patch AG status', ag('patch', onStatus), false],
    ['detect', 'creates the alarm', ping('create', noName), true],
    ['detect', 'patches the alarm', ping('patch'), true],
    ['detect', 'deletes the alarm', ping('delete'), true],
    ['detect', 'cannot delete another PingSource', ping('delete', { name: 'resync' }), false],
    ['detect', "reads the alarm's owner", ping('get', { name: 'resync' }), true],
    ['detect', "cannot patch the alarm's owner", ping('patch', { name: 'resync' }), false],
    [
      'detect',
      'cannot create a PingSource elsewhere',
      ping('create', { namespace: 'default' }),
      false,
    ],
    ['detect', 'cannot list PingSources', ping('list', { name: undefined }), false],
    ['detect', 'cannot touch PackageSources', ps('get'), false],
    ['force-drift', 'gets an AG', ag('get'), true],
    ['force-drift', 'patches AG annotations', ag('patch'), true],
    ['force-drift', 'patches AG status', ag('patch', onStatus), true],
    [
      'force-drift',
      'lists AGs (one name at one revision: the signal check, ADR 43)',
      ag('list', { ...allNs }),
      true,
    ],
    ['force-drift', 'cannot delete an AG', ag('delete'), false],
    ['force-drift', 'cannot update (PUT) an AG', ag('update'), false],
    ['force-drift', 'cannot patch a PackageSource', ps('patch', onStatus), false],
    ['surface-stalled', 'lists PackageSources', ps('list', { name: undefined }), true],
    ['surface-stalled', 'patches PackageSource status', ps('patch', onStatus), true],
    ['surface-stalled', 'cannot patch a PackageSource itself', ps('patch'), false],
    ['surface-stalled', 'gets an AG', ag('get'), true],
    ['surface-stalled', 'cannot patch an AG', ag('patch'), false],
    ['apiserversource', 'watches AGs in all namespaces', ag('watch', { ...allNs }), true],
    ['apiserversource', 'cannot patch an AG', ag('patch'), false],
    ['heal-external-artifacts', 'bumps an AG', ag('patch'), true],
    ['heal-external-artifacts', 'cannot patch an AG status', ag('patch', onStatus), false],
    ['heal-external-artifacts', 'deletes an ExternalArtifact', ea('delete'), true],
    ['heal-external-artifacts', 'cannot patch an ExternalArtifact', ea('patch'), false],
    ['dead-letter', 'cannot read an AG', ag('get'), false],
  ])('%s %s', (sa, _what, request, allowed) => {
    expect(ruleAllows(loadRbacRules(sa, base()), request)).toBe(allowed);
  });
});
