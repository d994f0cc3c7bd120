// knative/components/admission-policy (docs/adr/0055): in every install entry point, one policy
// and one Deny binding per function ServiceAccount, failing closed, each matching exactly its
// ServiceAccount's username in the install namespace, which is the name of the policies' param:
// the Namespace the binding selects by label (docs/adr/0063), the install's own. The alarm's name
// and its Broker follow recovery-config (a copy of knative/ with another ALARM_NAME and
// ALARM_SINK_BROKER in the ConfigMap alone carries them into detect's policy).

import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  findObject,
  objectsOfKind,
  renderKustomize,
  REPO_ROOT,
  RECOVERY_NAMESPACE,
  type K8sObject,
} from '../../support/manifests.js';
import { RENDERS } from './renders.js';

const FUNCTIONS = ['force-drift', 'heal-external-artifacts', 'surface-stalled', 'detect'];
/** The label of the install's Namespace, the policies' param (knative/base/namespace.yaml). */
const INSTALL_LABEL = 'source-watcher-recovery.cozystack.io/install';
/** Without the Namespace (half removed), the policies admit rather than refuse every such write. */
const ALLOW_WITHOUT = { parameterNotFoundAction: 'Allow' };
const SCOPED = 'knative/overlays/scoped';

interface PolicySpec {
  failurePolicy?: string;
  paramKind?: { apiVersion: string; kind: string };
  matchConditions?: { name: string; expression: string }[];
  variables?: { name: string; expression: string }[];
  validations?: { expression: string; reason?: string }[];
}
const specOf = (o: K8sObject): PolicySpec => o['spec'] as PolicySpec;
const variable = (o: K8sObject, name: string): string | undefined =>
  specOf(o).variables?.find((v) => v.name === name)?.expression;

describe.each([...RENDERS, SCOPED])('%s', (entry) => {
  const objects = renderKustomize(entry);

  it.each(FUNCTIONS)('%s: a policy failing closed, its binding denying', (fn) => {
    const name = `source-watcher-recovery-${fn}`;
    const policy = findObject(objects, 'ValidatingAdmissionPolicy', name);
    const binding = findObject(objects, 'ValidatingAdmissionPolicyBinding', name);
    expect(specOf(policy).failurePolicy).toBe('Fail');
    expect(specOf(policy).paramKind).toEqual({ apiVersion: 'v1', kind: 'Namespace' });
    expect(binding['spec']).toEqual({
      policyName: name,
      paramRef: { selector: { matchLabels: { [INSTALL_LABEL]: 'true' } }, ...ALLOW_WITHOUT },
      validationActions: ['Deny'],
    });
    expect(specOf(policy).matchConditions).toEqual([
      {
        name: fn,
        expression: `request.userInfo.username == 'system:serviceaccount:' + params.metadata.name + ':${fn}'`,
      },
    ]);
    // The one Namespace the binding selects: the install's.
    const selected = objectsOfKind(objects, 'Namespace').filter(
      (n) => n.metadata.labels?.[INSTALL_LABEL] === 'true',
    );
    expect(selected.map((n) => n.metadata.name)).toEqual([RECOVERY_NAMESPACE]);
    for (const v of specOf(policy).validations ?? [])
      expect(v.reason, v.expression).toBe('Forbidden');
  });

  it('no other policy (but the one on recovery-config, config-policy.test.ts)', () => {
    expect(objectsOfKind(objects, 'ValidatingAdmissionPolicy')).toHaveLength(FUNCTIONS.length + 1);
    expect(objectsOfKind(objects, 'ValidatingAdmissionPolicyBinding')).toHaveLength(
      FUNCTIONS.length + 1,
    );
  });
});

const tmp = mkdtempSync(path.join(os.tmpdir(), 'swr-vap-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("detect's policy follows recovery-config", () => {
  it('as shipped', () => {
    const policy = findObject(
      base(),
      'ValidatingAdmissionPolicy',
      'source-watcher-recovery-detect',
    );
    expect(variable(policy, 'alarmName')).toBe("'recovery-alarm'");
    expect(variable(policy, 'sinkBroker')).toBe("'default'");
    expect(variable(policy, 'installNamespace')).toBe('params.metadata.name');
  });

  it('another ALARM_NAME and ALARM_SINK_BROKER in the ConfigMap alone', () => {
    const root = path.join(tmp, 'renamed');
    cpSync(path.join(REPO_ROOT, 'knative'), path.join(root, 'knative'), { recursive: true });
    const config = path.join(root, 'knative', 'base', 'config.env');
    const text = readFileSync(config, 'utf8');
    const changed = text
      .replace(/^(ALARM_NAME=).*$/m, '$1other-alarm')
      .replace(/^(ALARM_SINK_BROKER=).*$/m, '$1other-broker');
    expect(changed).not.toBe(text);
    writeFileSync(config, changed);
    const policy = findObject(
      renderKustomize(path.join(root, 'knative')),
      'ValidatingAdmissionPolicy',
      'source-watcher-recovery-detect',
    );
    expect(variable(policy, 'alarmName')).toBe("'other-alarm'");
    expect(variable(policy, 'sinkBroker')).toBe("'other-broker'");
  });
});

function base(): K8sObject[] {
  return renderKustomize('knative');
}
