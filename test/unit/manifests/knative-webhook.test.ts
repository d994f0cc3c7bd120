// Knative Serving's own admission checks on every Service shipped: knative-validate (Serving's
// SetDefaults and Validate from knative.dev/serving v0.50.0, test/knative-validate/, ADR 66) runs
// them as Serving's webhooks do on a create in a default install (config-defaults, config-features
// and config-autoscaler as installed) on `kubectl kustomize` of knative/ and of every overlay, and
// on `helm template` of the chart for each row of the chart test's settings. The CRD schema
// (integration/manifests-dry-run.test.ts) does not see these rules: container and securityContext
// fields, feature-gated pod fields, annotations, bounds. A table of broken Services proves that
// each kind of rule is enforced, with the field named.

import { describe, expect, it } from 'vitest';
import { CHART_DIR } from '../../chart/generate.js';
import { helmTemplate } from '../../support/helm.js';
import {
  knativeErrors,
  knativeValidate,
  knativeValidateText,
} from '../../support/knative-validate.js';
import { findObject, renderKustomize, type K8sObject } from '../../support/manifests.js';
import { CHART_ROWS } from './chart-rows.js';
import { BASE, ENTRY_POINTS } from './renders.js';

const isKnativeService = (o: K8sObject): boolean =>
  o.apiVersion === 'serving.knative.dev/v1' && o.kind === 'Service';

/** Runs the checks on a render: every Knative Service in it is checked, none is refused. */
function expectAccepted(objects: readonly K8sObject[]): void {
  const report = knativeValidate(objects);
  const expected = objects.filter(isKnativeService).map((o) => o.metadata.name);
  expect(expected.length).toBeGreaterThan(0);
  expect(report.documents).toBe(objects.length);
  expect(report.services.map((s) => s.name).sort()).toEqual([...expected].sort());
  expect(knativeErrors(report)).toEqual([]);
  expect(report.services.flatMap((s) => s.warnings)).toEqual([]);
  expect(report.status).toBe(0);
}

describe("Knative Serving's webhook accepts every rendered Service", () => {
  it.each(ENTRY_POINTS)('kubectl kustomize %s', (dir) => {
    expectAccepted(renderKustomize(dir));
  });

  it.each(CHART_ROWS)('helm template with $name', ({ values }) => {
    expectAccepted(helmTemplate(CHART_DIR, values));
  });
});

type Mutation = (spec: Spec) => void;
interface Spec {
  metadata: { annotations: Record<string, string> };
  spec: Record<string, unknown> & { containers: Record<string, unknown>[] };
}
const container = (s: Spec): Record<string, unknown> => s.spec.containers[0] ?? {};
const securityContext = (s: Spec) => container(s)['securityContext'] as Record<string, unknown>;

/** Each a change to the base's detect Service that Knative refuses, and the field it must name. */
const BROKEN: [name: string, change: Mutation, field: RegExp][] = [
  [
    'unknown-container-field',
    (s) => (container(s)['imagePullPolice'] = 'Always'),
    /unknown field "spec\.template\.spec\.containers\[0\]\.imagePullPolice"/,
  ],
  [
    'field-in-other-case',
    (s) => (container(s)['Ports'] = container(s)['ports']),
    /unknown field "spec\.template\.spec\.containers\[0\]\.Ports"/,
  ],
  [
    'privileged',
    (s) => (securityContext(s)['privileged'] = true),
    /must not set the field\(s\): spec\.template\.spec\.containers\[0\]\.securityContext\.privileged/,
  ],
  [
    'capability-added',
    (s) => (securityContext(s)['capabilities'] = { drop: ['ALL'], add: ['NET_ADMIN'] }),
    /must not set the field\(s\): spec\.template\.spec\.containers\[0\]\.securityContext\.capabilities\.add/,
  ],
  [
    'host-network',
    (s) => (s.spec['hostNetwork'] = true),
    /must not set the field\(s\): spec\.template\.spec\.hostNetwork/,
  ],
  [
    // Behind kubernetes.podspec-fieldref, off in a default install.
    'downward-api-env',
    (s) =>
      (container(s)['env'] = [
        { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      ]),
    /must not set the field\(s\): spec\.template\.spec\.containers\[0\]\.env\[0\]\.valueFrom\.fieldRef/,
  ],
  [
    'reserved-env',
    (s) => (container(s)['env'] = [{ name: 'K_SERVICE', value: 'detect' }]),
    /"K_SERVICE" is a reserved environment variable: spec\.template\.spec\.containers\[0\]\.env\[0\]\.name/,
  ],
  [
    'reserved-port',
    (s) => (container(s)['ports'] = [{ name: 'http1', containerPort: 8012 }]),
    /8012 is a reserved port: spec\.template\.spec\.containers\[0\]\.ports\.containerPort/,
  ],
  [
    'timeout-over-max',
    (s) => (s.spec['timeoutSeconds'] = 601),
    /expected 0 <= 601 <= 600: spec\.template\.spec\.timeoutSeconds/,
  ],
  [
    'container-concurrency-over-max',
    (s) => (s.spec['containerConcurrency'] = 1001),
    /expected 0 <= 1001 <= 1000: spec\.template\.spec\.containerConcurrency/,
  ],
  [
    'max-scale-not-a-number',
    (s) => (s.metadata.annotations['autoscaling.knative.dev/max-scale'] = 'many'),
    /invalid value: many: spec\.template\.metadata\.annotations\.autoscaling\.knative\.dev\/max-scale/,
  ],
  [
    'min-scale-over-max-scale',
    (s) => (s.metadata.annotations['autoscaling.knative.dev/min-scale'] = '99'),
    /max-scale=\d+ is less than min-scale=99: spec\.template\.metadata\.annotations\.autoscaling\.knative\.dev\/(max|min)-scale/,
  ],
];

describe('the checks can fail: broken Services are refused, naming the field', () => {
  const detect = findObject(renderKustomize(BASE), 'Service', 'detect', 'serving.knative.dev');
  const broken = BROKEN.map(([name, change]) => {
    const copy = structuredClone(detect);
    copy.metadata.name = `detect-${name}`;
    change((copy['spec'] as { template: Spec }).template);
    return copy;
  });
  const control = { ...structuredClone(detect), metadata: { ...detect.metadata, name: 'control' } };
  const report = knativeValidate([control, ...broken]);

  it('the run exits 1 and checks every Service; the unchanged copy passes', () => {
    expect(report.status).toBe(1);
    expect(report.services.map((s) => s.name)).toEqual([
      'control',
      ...broken.map((b) => b.metadata.name),
    ]);
    expect(report.services[0]?.errors).toEqual([]);
  });

  it.each(BROKEN)('%s', (name, _change, field) => {
    const finding = report.services.find((s) => s.name === `detect-${name}`);
    expect(finding?.namespace).toBe('source-watcher-recovery');
    expect(finding?.errors.join('\n')).toMatch(field);
  });

  it('a document that is not YAML is an error, not a silent pass', () => {
    const r = knativeValidateText('apiVersion: [\n');
    expect(r.status).toBe(1);
    expect(knativeErrors(r)).toHaveLength(1);
  });
});
