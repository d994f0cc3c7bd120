// The admission policy on recovery-config is generated from the rules table: the committed
// knative/components/admission-policy/policy-config.yaml is exactly what `npm run
// generate:config-policy` writes from shared/core/config/rules.ts (docs/adr/0064), and every
// render carries it.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  CONFIG_POLICY_NAME,
  CONFIG_RULES,
  configPolicyObjects,
  variableOf,
} from '../../../shared/core/index.js';
import { CONFIG_POLICY_FILE, configPolicyYaml } from '../../generate/config-policy.js';
import { findObject, renderKustomize } from '../../support/manifests.js';

const committed = readFileSync(CONFIG_POLICY_FILE, 'utf8');

describe('policy-config.yaml', () => {
  it('is what the rules table generates (run `npm run generate:config-policy`)', () => {
    const docs = parseAllDocuments(committed).map((d) => d.toJS() as unknown);
    expect(docs).toEqual(configPolicyObjects());
    const generated = parseAllDocuments(configPolicyYaml()).map((d) => d.toJS() as unknown);
    expect(generated).toEqual(docs);
  });

  it('has one variable and one validation per rule, and one per order rule', () => {
    const [policy] = configPolicyObjects() as [{ spec: { variables: { name: string }[] } }];
    expect(policy.spec.variables.map((v) => v.name)).toEqual(
      CONFIG_RULES.map((r) => variableOf(r.key)),
    );
    const spec = policy.spec as unknown as { validations: unknown[] };
    expect(spec.validations).toHaveLength(CONFIG_RULES.length + 1);
  });

  it.each(['knative', 'knative/overlays/flux-only', 'knative/overlays/scoped', 'test/relocated'])(
    '%s renders the policy and its binding, selecting the install Namespace by label',
    (render) => {
      const objects = renderKustomize(render);
      findObject(objects, 'ValidatingAdmissionPolicy', CONFIG_POLICY_NAME);
      const binding = findObject(objects, 'ValidatingAdmissionPolicyBinding', CONFIG_POLICY_NAME);
      expect(binding.spec).toMatchObject({
        policyName: CONFIG_POLICY_NAME,
        validationActions: ['Deny'],
        matchResources: {
          namespaceSelector: {
            matchLabels: { 'source-watcher-recovery.cozystack.io/install': 'true' },
          },
        },
      });
      expect(binding.metadata.labels?.['app.kubernetes.io/part-of']).toBe(
        'source-watcher-recovery',
      );
    },
  );
});
