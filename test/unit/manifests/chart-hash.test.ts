// recovery-config generated with a content hash (kustomize configMapGenerator, issue 35): the
// chart names it as kustomize does. The chart's helper "swr.kustomizeConfigMapName" against
// `kubectl kustomize` of a configMapGenerator on the same data (real Helm, real kustomize), and
// the generator's handling of a hashed render: the name becomes the helper and every reference
// to it follows (test/chart/emit.ts, docs/adr/0065).

import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { emit, CONFIG_TOKEN } from '../../chart/emit.js';
import { CHART_DIR } from '../../chart/generate.js';
import { DEFAULT_SETTINGS } from '../../chart/variants.js';
import { helmTemplate } from '../../support/helm.js';
import { renderKustomize, type K8sObject } from '../../support/manifests.js';

const temp = mkdtempSync(path.join(os.tmpdir(), 'swr-chart-hash-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

/** A chart of the real helpers and one template that names a ConfigMap of `.Values.data`. */
function helperChart(): string {
  const dir = path.join(temp, 'chart');
  mkdirSync(path.join(dir, 'templates'), { recursive: true });
  cpSync(
    path.join(CHART_DIR, 'templates', '_helpers.tpl'),
    path.join(dir, 'templates', '_helpers.tpl'),
  );
  writeFileSync(path.join(dir, 'Chart.yaml'), 'apiVersion: v2\nname: hash\nversion: 0.0.1\n');
  writeFileSync(
    path.join(dir, 'templates', 'cm.yaml'),
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include "swr.kustomizeConfigMapName" (dict "name" "recovery-config" "data" .Values.data) }}\n',
  );
  return dir;
}

describe('recovery-config named as kustomize hashes it', () => {
  it.each([
    [
      'the defaults',
      { RECOVERY_MODE: 'enforce', RECOVERY_GRACE_PERIOD: '2m30s', RECOVERY_EARLY_DETECTION: 'on' },
    ],
    ['HTML characters and non-ASCII', { A: '<a&b>', B: 'é ✓', C: 'x"y\\z' }],
    ['one key', { LOG_LEVEL: 'debug' }],
  ])('%s', (_name, data) => {
    const dir = path.join(temp, `kustomize-${Object.keys(data).join('-')}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      path.join(dir, 'kustomization.yaml'),
      stringify({
        apiVersion: 'kustomize.config.k8s.io/v1beta1',
        kind: 'Kustomization',
        configMapGenerator: [
          { name: 'recovery-config', literals: Object.entries(data).map(([k, v]) => `${k}=${v}`) },
        ],
      }),
    );
    const [fromKustomize] = renderKustomize(dir);
    expect(fromKustomize?.metadata.name).toMatch(/^recovery-config-[a-z0-9]{10}$/);
    const [fromHelm] = helmTemplate(helperChart(), { data });
    expect(fromHelm?.metadata.name).toBe(fromKustomize?.metadata.name);
  });
});

describe('the generator on a render whose recovery-config is hashed', () => {
  const hashed = 'recovery-config-5t8b7k2mgh';
  const objects: K8sObject[] = [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: hashed, namespace: 'ns' },
      data: { LOG_LEVEL: 'info' },
    },
    {
      apiVersion: 'serving.knative.dev/v1',
      kind: 'Service',
      metadata: { name: 'detect', namespace: 'ns' },
      spec: {
        template: {
          spec: { containers: [{ image: 'img:1', envFrom: [{ configMapRef: { name: hashed } }] }] },
        },
      },
    },
  ];
  const out = emit({
    variants: [{ settings: DEFAULT_SETTINGS, objects }],
    image: 'img:1',
    derivedKeys: new Map(),
  });

  it('names the ConfigMap with the hash helper over the data it renders', () => {
    expect(out.hashedConfig).toBe(true);
    expect(out.configHelpers).toContain(
      'include "swr.kustomizeConfigMapName" (dict "name" "recovery-config"',
    );
    expect(out.templates.get('templates/recovery-config.yaml')).toContain('name: {{ $config }}');
    // Once: not also as a plain ConfigMap of that name.
    expect([...out.templates.keys()].sort()).toEqual([
      'templates/recovery-config.yaml',
      'templates/service.yaml',
    ]);
  });

  it('makes every reference to the hashed name follow it', () => {
    const service = out.templates.get('templates/service.yaml') ?? '';
    expect(service).toContain('name: {{ $config }}');
    expect(service).not.toContain(hashed);
    expect(service).not.toContain(CONFIG_TOKEN);
  });
});
