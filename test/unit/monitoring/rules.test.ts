// The monitoring component (knative/components/monitoring, issue 36): promtool (built from the
// Prometheus module by test/prometheus/build.sh) runs the rules' unit tests, each alert firing
// and not firing (promtool/rules.test.yaml over the PrometheusRule's groups, written to a
// temporary rules.yaml beside a copy of it); the PrometheusRule and the VMRule carry the same
// groups; the
// dashboard asks only queries that the rule tests or the e2e PromQL check evaluate against a
// real Prometheus; the component renders with kustomize.

import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { PROMTOOL_BIN, prometheusBinary } from '../../harness/prometheus/index.js';
import { renderKustomize } from '../../support/manifests.js';
import { E2E_QUERIES } from '../../support/monitoring-queries.js';

const ROOT = resolve(import.meta.dirname, '../../..');
const DIR = join(ROOT, 'knative/components/monitoring');
const yamlOf = (file: string): unknown => parse(readFileSync(join(DIR, file), 'utf8'));

interface Groups {
  groups: { name: string; rules: { alert: string; expr: string }[] }[];
}
const rules = (yamlOf('prometheusrule.yaml') as { spec: Groups }).spec;
const RULE_TESTS = join(import.meta.dirname, 'promtool/rules.test.yaml');

describe('monitoring: alert rules', () => {
  it('promtool test rules passes every case of promtool/rules.test.yaml', () => {
    const dir = mkdtempSync(join(tmpdir(), 'swr-promtool-'));
    try {
      writeFileSync(join(dir, 'rules.yaml'), stringify({ groups: rules.groups }));
      copyFileSync(RULE_TESTS, join(dir, 'rules.test.yaml'));
      const out = execFileSync(
        prometheusBinary(PROMTOOL_BIN),
        ['test', 'rules', 'rules.test.yaml'],
        {
          cwd: dir,
          encoding: 'utf8',
        },
      );
      expect(out).toContain('SUCCESS');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('every alert has a firing and a not-firing case in the rule tests', () => {
    const tests = parse(readFileSync(RULE_TESTS, 'utf8')) as {
      tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
    };
    const cases = tests.tests.flatMap((t) => t.alert_rule_test);
    for (const { alert } of rules.groups.flatMap((g) => g.rules)) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect(
        mine.some((c) => c.exp_alerts.length > 0),
        `${alert} fires`,
      ).toBe(true);
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${alert} stays quiet`,
      ).toBe(true);
    }
  });

  it('the PrometheusRule and the VMRule carry exactly the same groups', () => {
    const pr = yamlOf('prometheusrule.yaml') as { kind: string; apiVersion: string; spec: Groups };
    const vm = yamlOf('vmrule.yaml') as { kind: string; apiVersion: string; spec: Groups };
    expect([pr.apiVersion, pr.kind]).toEqual(['monitoring.coreos.com/v1', 'PrometheusRule']);
    expect([vm.apiVersion, vm.kind]).toEqual(['operator.victoriametrics.com/v1beta1', 'VMRule']);
    expect(vm.spec.groups).toEqual(pr.spec.groups);
    const alerts = rules.groups.flatMap((g) => g.rules.map((r) => r.alert));
    expect(alerts).toEqual(
      expect.arrayContaining([
        'SourceWatcherRecoveryStalled',
        'SourceWatcherRecoveryForcesHigh',
        'SourceWatcherRecoveryEarlyDetectionDegraded',
        'SourceWatcherRecoveryDeliveriesFailing',
        'SourceWatcherRecoveryDeadLetters',
      ]),
    );
  });

  it('the dashboard asks only what the rule tests or the e2e PromQL check evaluate', () => {
    const dashboard = JSON.parse(readFileSync(join(DIR, 'dashboard.json'), 'utf8')) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    const evaluated = new Set<string>([
      ...rules.groups.flatMap((g) => g.rules.map((r) => r.expr)),
      ...Object.values(E2E_QUERIES),
    ]);
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr));
    expect(exprs.length).toBeGreaterThanOrEqual(evaluated.size);
    for (const e of exprs) expect(evaluated, e).toContain(e);
  });

  it('renders with kustomize as a component (PrometheusRule, VMRule, dashboard ConfigMap)', () => {
    const objects = renderKustomize('test/unit/monitoring/fixture');
    const kinds = objects.map((o) => o.kind).sort();
    const dashboard = objects.find((o) => o.kind === 'ConfigMap') as
      { metadata: { labels?: Record<string, string> }; data?: Record<string, string> } | undefined;
    expect(dashboard?.metadata.labels?.['grafana_dashboard']).toBe('1');
    expect(Object.keys(dashboard?.data ?? {})).toEqual(['dashboard.json']);
    expect(kinds).toEqual(['ConfigMap', 'PrometheusRule', 'VMRule']);
  });
});
