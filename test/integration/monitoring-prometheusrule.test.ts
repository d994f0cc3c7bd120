// The monitoring component's PrometheusRule (knative/components/monitoring) against the real
// schema: the PrometheusRule CRD that test/crds/generate.sh generates with controller-gen from the
// Prometheus Operator's served API types, installed in the test API server. Created with
// dryRun=All and fieldValidation=Strict (nothing persisted): accepted as it is, refused with a
// malformed `for`. The VMRule has no served schema (the VictoriaMetrics operator's module is not
// served); test/unit/monitoring proves its groups equal the PrometheusRule's.

import * as k8s from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { testKubeConfig } from '../support/apiserver.js';
import { renderKustomize } from '../support/manifests.js';

const kc = testKubeConfig();
const api = kc.makeApiClient(k8s.CustomObjectsApi);

interface Rule {
  metadata: { name: string };
  spec: { groups: { rules: Record<string, unknown>[] }[] };
}

function prometheusRule(): Rule {
  const found = renderKustomize('test/unit/monitoring/fixture').find(
    (o) => o.kind === 'PrometheusRule',
  );
  if (found === undefined) throw new Error('no PrometheusRule rendered');
  return structuredClone(found) as unknown as Rule;
}

const create = (body: Rule) =>
  api.createNamespacedCustomObject({
    group: 'monitoring.coreos.com',
    version: 'v1',
    namespace: 'default',
    plural: 'prometheusrules',
    body: { ...body, metadata: { ...body.metadata, namespace: 'default' } },
    dryRun: 'All',
    fieldValidation: 'Strict',
  });

describe('monitoring: the PrometheusRule on the real CRD', () => {
  it('is accepted by the generated PrometheusRule schema, strict', async () => {
    const created = (await create(prometheusRule())) as Rule;
    expect(created.spec.groups[0]?.rules.length).toBe(5);
  });

  it('a malformed duration is refused (the schema is enforced)', async () => {
    const bad = prometheusRule();
    bad.spec.groups[0]!.rules[0]!['for'] = 'five minutes';
    await expect(create(bad)).rejects.toMatchObject({ code: 422 });
  });
});
