// The Helm chart (knative/chart/source-watcher-recovery, docs/adr/0065) renders, for each row of
// settings, the same objects as `kubectl kustomize` of the matching kustomize entry point or of an
// overlay of it that a user would write: object by object, with the real Helm (test/helm/build.sh,
// helm.sh/helm/v3 v3.22.0). The chart is generated from the renders (`npm run chart`); the
// committed one must be what the generator writes now, so a change to knative/ without a
// re-generation fails here. The rows of settings: chart-rows.ts.

import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CHART_DIR, generateChart, staleFiles } from '../../chart/generate.js';
import { helmTemplate, runHelm } from '../../support/helm.js';
import { renderKustomize, type K8sObject } from '../../support/manifests.js';
import { CHART_ROWS, healObjects, keyOf } from './chart-rows.js';
import { BASE, CLUSTER_SCOPED } from './renders.js';

const temp = mkdtempSync(path.join(os.tmpdir(), 'swr-chart-test-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

/** Objects by key; cluster-scoped kinds without the namespace a `namespace:` overlay gives them. */
function byKey(objects: readonly K8sObject[]): Map<string, K8sObject> {
  const out = new Map<string, K8sObject>();
  for (const o of objects) {
    const copy = structuredClone(o);
    if (CLUSTER_SCOPED.has(copy.kind)) delete copy.metadata.namespace;
    const key = keyOf(copy);
    if (out.has(key)) throw new Error(`${key} twice`);
    out.set(key, copy);
  }
  return out;
}

describe('the chart renders what kustomize renders', () => {
  it.each(CHART_ROWS)('$name', ({ values, kustomize }) => {
    const chart = byKey(helmTemplate(CHART_DIR, values));
    const expected = byKey(kustomize(temp));
    expect([...chart.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [key, object] of expected) expect(chart.get(key), key).toEqual(object);
  });

  it('scope.namespaces of your own: the grants, RECOVERY_NAMESPACES and the source follow it', () => {
    const objects = helmTemplate(CHART_DIR, {
      scope: { namespaces: ['team-a', 'team-b', 'team-c'] },
      mode: 'observe',
    });
    const bindings = objects.filter(
      (o) => o.kind === 'RoleBinding' && o.metadata.namespace !== 'source-watcher-recovery',
    );
    expect(new Set(bindings.map((o) => o.metadata.namespace))).toEqual(
      new Set(['team-a', 'team-b', 'team-c']),
    );
    expect(bindings).toHaveLength(9);
    const config = objects.find((o) => o.kind === 'ConfigMap') as K8sObject;
    expect((config.data as Record<string, string>).RECOVERY_NAMESPACES).toBe(
      'team-a,team-b,team-c',
    );
    expect((config.data as Record<string, string>).RECOVERY_MODE).toBe('observe');
    const source = objects.find((o) => o.kind === 'ApiServerSource') as K8sObject;
    expect(JSON.stringify(source.spec)).toContain('"values":["team-a","team-b","team-c"]');
    expect(
      objects.filter((o) => o.kind === 'ClusterRoleBinding').map((o) => o.metadata.name),
    ).not.toContain('source-watcher-recovery-detect');
  });

  it('the heal-external-artifacts row removes objects (its table is not empty)', () => {
    expect(healObjects.size).toBeGreaterThan(5);
    expect(renderKustomize(BASE).some((o) => healObjects.has(keyOf(o)))).toBe(true);
  });
});

describe('bad values: a clear error and no render', () => {
  it.each([
    ['mode act', { mode: 'act' }, /mode/],
    // YAML 1.1 reads an unquoted off as false.
    ['mode off unquoted (false)', { mode: false }, /mode/],
    [
      'config sets RECOVERY_MODE',
      { config: { RECOVERY_MODE: 'observe' } },
      /config\.RECOVERY_MODE cannot be set/,
    ],
    ['config sets ALARM_NAME', { config: { ALARM_NAME: 'x' } }, /config\.ALARM_NAME cannot be set/],
    ['config key not a ConfigMap key', { config: { 'A B': 'x' } }, /"A B" is not a ConfigMap key/],
    [
      'namespace not a DNS label',
      { namespace: { name: 'Cozy_System' } },
      /namespace\.name: "Cozy_System" is not a namespace name/,
    ],
    ['namespace all digits', { namespace: { name: '123' } }, /all digits/],
    ['digest not sha256', { image: { digest: 'sha256:abc' } }, /digest/],
    ['unknown value', { functions: { detect: false } }, /detect/],
    [
      'scope namespace not a DNS label',
      { scope: { namespaces: ['Flux_Apps'] } },
      /scope\.namespaces: "Flux_Apps" is not a namespace name/,
    ],
    [
      'scope namespace twice',
      { scope: { namespaces: ['a', 'a'] } },
      /scope\.namespaces: a namespace is listed twice/,
    ],
    [
      'config sets RECOVERY_NAMESPACES',
      { config: { RECOVERY_NAMESPACES: 'a' } },
      /config\.RECOVERY_NAMESPACES cannot be set/,
    ],
  ])('%s', (_name, values, message) => {
    const r = runHelm(['template', 'swr', CHART_DIR], values);
    expect(r.status).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
  });
});

describe('the chart is the one the generator writes', () => {
  const files = generateChart();

  it('no committed file differs from `npm run chart`', () => {
    expect(staleFiles(files)).toEqual([]);
  });

  it('a stale copy is found (a changed template, a template the generator no longer writes)', () => {
    const copy = path.join(temp, 'stale-chart');
    cpSync(CHART_DIR, copy, { recursive: true });
    writeFileSync(path.join(copy, 'templates', 'broker.yaml'), '# edited by hand\n');
    writeFileSync(path.join(copy, 'templates', 'leftover.yaml'), '# no longer generated\n');
    expect(staleFiles(files, copy).sort()).toEqual([
      'templates/broker.yaml',
      'templates/leftover.yaml',
    ]);
  });

  it('helm lint passes', () => {
    const r = runHelm(['lint', '--strict', CHART_DIR]);
    expect(r.stderr + r.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    expect(r.status).toBe(0);
  });
});
