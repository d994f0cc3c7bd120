// The admission policies' `parameterNotFoundAction: Allow` (knative/components/admission-policy/
// bindings.yaml, docs/adr/0068) on the real kube-apiserver. Each policy's param is the install's
// Namespace, found by its label; the policies name the function identities through it. So:
// - Allow: an install whose Namespace lacks the label (the chart's `namespace.create: false`
//   without labelling it) has its functions limited by RBAC alone: detect of that namespace may
//   create any PingSource RBAC lets it. Labelling the Namespace puts the shipped policy in force.
// - Deny would be worse: with no param found, the API server refuses before the policy's
//   matchConditions (which name the identity through the param) are looked at, so every write of
//   every user to the matched resources (source-watcher's to every AG, anyone's PingSource) would
//   be refused while the label is missing. Shown with a binding confined to a namespace of its own.

import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestToken, withToken } from '../setup/cluster-rbac.js';
import { testKubeConfig, uniqueName } from '../support/apiserver.js';
import { INSTALL_LABEL } from '../../shared/core/config/policy.js';

const admin = testKubeConfig();
const core = admin.makeApiClient(k8s.CoreV1Api);
const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
const regs = admin.makeApiClient(k8s.AdmissionregistrationV1Api);
const PING = { group: 'sources.knative.dev', version: 'v1', plural: 'pingsources' };
const DETECT_POLICY = 'source-watcher-recovery-detect';

/** An install namespace made elsewhere and not labelled, with a `detect` allowed by RBAC. */
const UNLABELLED = uniqueName('swr-unlabelled');
/** A namespace of its own for the Deny binding, so it judges nothing else in the test world. */
const CONFINED = uniqueName('swr-deny-probe');
const DENY_BINDING = uniqueName('swr-deny-probe');

const notTheAlarm = (namespace: string) => ({
  apiVersion: 'sources.knative.dev/v1',
  kind: 'PingSource',
  metadata: { name: 'not-the-alarm', namespace },
  spec: { schedule: '0 0 1 1 *', sink: { uri: 'http://elsewhere.invalid/' } },
});

/** The write's HTTP status, and the body of a refusal. */
async function statusOf(write: Promise<unknown>): Promise<{ code: number; body: string }> {
  return write.then(
    () => ({ code: 201, body: '' }),
    (e: unknown) => {
      const err = e as k8s.ApiException<unknown>;
      return {
        code: err.code,
        body: typeof err.body === 'string' ? err.body : JSON.stringify(err.body),
      };
    },
  );
}

let detect: k8s.CustomObjectsApi;
beforeAll(async () => {
  await core.createNamespace({ body: { metadata: { name: UNLABELLED } } });
  await core.createNamespace({
    body: { metadata: { name: CONFINED, labels: { probe: CONFINED } } },
  });
  await core.createNamespacedServiceAccount({
    namespace: UNLABELLED,
    body: { metadata: { name: 'detect' } },
  });
  await rbac.createNamespacedRole({
    namespace: UNLABELLED,
    body: {
      metadata: { name: 'detect-alarm' },
      rules: [
        { apiGroups: ['sources.knative.dev'], resources: ['pingsources'], verbs: ['create'] },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: UNLABELLED,
    body: {
      metadata: { name: 'detect-alarm' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'detect-alarm' },
      subjects: [{ kind: 'ServiceAccount', name: 'detect', namespace: UNLABELLED }],
    },
  });
  const token = await requestToken(admin, 'detect', UNLABELLED);
  detect = withToken(admin, token).makeApiClient(k8s.CustomObjectsApi);
});

afterAll(async () => {
  await regs.deleteValidatingAdmissionPolicyBinding({ name: DENY_BINDING }).catch(() => undefined);
  for (const name of [UNLABELLED, CONFINED]) {
    await core.deleteNamespace({ name }).catch(() => undefined);
  }
});

const create = (api: k8s.CustomObjectsApi, namespace: string) =>
  statusOf(
    api.createNamespacedCustomObject({
      ...PING,
      namespace,
      body: notTheAlarm(namespace),
      dryRun: 'All',
    }),
  );

describe('parameterNotFoundAction: Allow (the shipped bindings)', () => {
  it('every shipped binding with a param says Allow', async () => {
    const list = await regs.listValidatingAdmissionPolicyBinding();
    const shipped = list.items.filter((b) => b.spec?.policyName?.startsWith('source-watcher-'));
    const withParam = shipped.filter((b) => b.spec?.paramRef !== undefined);
    expect(withParam.map((b) => b.metadata?.name).sort()).toEqual([
      'source-watcher-recovery-detect',
      'source-watcher-recovery-force-drift',
      'source-watcher-recovery-heal-external-artifacts',
      'source-watcher-recovery-surface-stalled',
    ]);
    for (const b of withParam) {
      expect(b.spec?.paramRef?.parameterNotFoundAction, b.metadata?.name).toBe('Allow');
    }
  });

  it('an install namespace without the label: its detect is limited by RBAC alone; labelled, the policy holds', async () => {
    // Not labelled: no param names this namespace, so the detect policy does not judge its detect.
    expect((await create(detect, UNLABELLED)).code).toBe(201);
    // Labelled as an install: the shipped policy now has it as a param and refuses the write.
    await core.patchNamespace(
      { name: UNLABELLED, body: { metadata: { labels: { [INSTALL_LABEL]: 'true' } } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    let refused = { code: 0, body: '' };
    // The policy's param informer sees the label a moment later.
    for (let i = 0; i < 40 && refused.code !== 403; i++) {
      refused = await create(detect, UNLABELLED);
      if (refused.code !== 403) await new Promise((r) => setTimeout(r, 250));
    }
    expect(refused.code, refused.body).toBe(403);
    expect(refused.body).toContain(`ValidatingAdmissionPolicy '${DETECT_POLICY}'`);
    expect(refused.body).toContain(`only its alarm PingSource ${UNLABELLED}/recovery-alarm`);
  });
});

describe('parameterNotFoundAction: Deny (why not)', () => {
  it('with no param found, refuses every user, the cluster admin included, before matchConditions', async () => {
    const asAdmin = admin.makeApiClient(k8s.CustomObjectsApi);
    expect((await create(asAdmin, CONFINED)).code).toBe(201);
    await regs.createValidatingAdmissionPolicyBinding({
      body: {
        metadata: { name: DENY_BINDING },
        spec: {
          policyName: DETECT_POLICY,
          paramRef: {
            selector: { matchLabels: { [`${INSTALL_LABEL}-absent`]: 'true' } },
            parameterNotFoundAction: 'Deny',
          },
          matchResources: { namespaceSelector: { matchLabels: { probe: CONFINED } } },
          validationActions: ['Deny'],
        },
      },
    });
    let refused = { code: 201, body: '' };
    for (let i = 0; i < 40 && refused.code === 201; i++) {
      refused = await create(asAdmin, CONFINED);
      if (refused.code === 201) await new Promise((r) => setTimeout(r, 250));
    }
    // A binding it cannot configure: failurePolicy Fail refuses (HTTP 422, reason Invalid).
    expect(refused.code, refused.body).toBe(422);
    expect(refused.body).toContain(`ValidatingAdmissionPolicy '${DETECT_POLICY}'`);
    expect(refused.body).toMatch(/no params found for policy binding with `Deny`/);
  });
});
