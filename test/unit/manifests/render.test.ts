// knative/ as a whole: every YAML file parses, the base and both overlays render with kustomize,
// and each render holds exactly the expected objects.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  findRecoveryConfig,
  KNATIVE_DIR,
  RECOVERY_NAMESPACE,
  kubectlBinary,
  isRecoveryConfig,
  loadKustomizationResources,
  loadRbacRules,
  renderKustomize,
  type K8sObject,
  type PolicyRule,
} from '../../support/manifests.js';
import { toKnativeManifests, type TriggerSpec } from '../../harness/knative/manifests.js';
import { BASE, CLUSTER_SCOPED, FLUX_ONLY, OBSERVE, recoveryConfig } from './renders.js';

/** `Kind/name` of each name. */
const named = (kind: string, ...names: string[]): string[] => names.map((n) => `${kind}/${n}`);
/** The ClusterRole source-watcher-recovery-<name> and its ClusterRoleBinding. */
const clusterRole = (name: string): string[] =>
  ['ClusterRole', 'ClusterRoleBinding'].map((kind) => `${kind}/source-watcher-recovery-${name}`);

/** A function's ServiceAccount, ClusterRole (and binding) and Service, and its Triggers <name>-<t>. */
const functionObjects = (name: string, triggers: string[]): string[] => [
  `ServiceAccount/${name}`,
  ...clusterRole(name),
  `Service/${name}`,
  ...named('Trigger', ...triggers.map((t) => `${name}-${t}`)),
];

const CORE_OBJECTS = [
  'Namespace/source-watcher-recovery',
  'ConfigMap/recovery-config',
  'Broker/default',
  ...functionObjects('detect', ['ag-add', 'ag-update', 'resync', 'alarm']),
  ...named('Role', 'detect-alarm'),
  ...named('RoleBinding', 'detect-alarm'),
  ...functionObjects('force-drift', ['force', 'clear-tracking']),
  ...named('ServiceAccount', 'dead-letter', 'apiserversource'),
  'Service/dead-letter',
  ...clusterRole('apiserversource'),
  // Sender authentication's TokenReview (docs/adr/0056).
  ...clusterRole('token-review'),
  'ApiServerSource/artifactgenerators',
  'PingSource/resync',
  'SinkBinding/detect',
];
// The Cozystack part: surface-stalled, and force-drift's read of PackageSources (docs/adr/0020).
const COZYSTACK_OBJECTS = [
  ...functionObjects('surface-stalled', ['ag-add', 'ag-update', 'stalled', 'resync']),
  ...clusterRole('force-drift-packagesources'),
  'ClusterRoleBinding/source-watcher-recovery-token-review-surface-stalled',
];
// functions/heal-external-artifacts (docs/adr/0038): in every install entry point.
const HEAL_OBJECTS = [
  ...functionObjects('heal-external-artifacts', ['update', 'delete']),
  ...clusterRole('apiserversource-externalartifacts'),
  'ClusterRoleBinding/source-watcher-recovery-token-review-heal-external-artifacts',
  'ApiServerSource/externalartifacts',
];
// components/admission-policy (docs/adr/0055): in every install entry point.
const POLICY_OBJECTS = [
  'force-drift',
  'heal-external-artifacts',
  'surface-stalled',
  'detect',
  // recovery-config's values (docs/adr/0064).
  'config',
].flatMap((name) =>
  ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'].map(
    (kind) => `${kind}/source-watcher-recovery-${name}`,
  ),
);

// recovery-config's name carries a hash of its content (docs/adr/0064): keyed by its base name.
const key = (o: K8sObject): string =>
  `${o.kind}/${isRecoveryConfig(o) ? 'recovery-config' : o.metadata.name}`;
const keys = (objects: readonly K8sObject[]): string[] => objects.map(key).sort();

/** The Helm chart (knative/chart/) holds Go templates and values, not objects: chart.test.ts. */
const CHART_DIR = path.join(KNATIVE_DIR, 'chart');

const KUSTOMIZE_INPUTS = new Set(['kustomizeconfig.yaml', 'follow-namespace.yaml']);

function yamlFiles(dir: string): string[] {
  return (
    readdirSync(dir, { withFileTypes: true, recursive: true })
      // Kustomize inputs that hold no object: kustomizeconfig.yaml, a transformer configuration
      // (`configurations:`); follow-namespace.yaml, a list of replacements (`replacements:`).
      .filter((e) => e.isFile() && /\.ya?ml$/.test(e.name) && !KUSTOMIZE_INPUTS.has(e.name))
      .filter((e) => !`${e.parentPath}${path.sep}`.startsWith(`${CHART_DIR}${path.sep}`))
      .map((e) => path.join(e.parentPath, e.name))
      .sort()
  );
}

describe('kubectl', () => {
  it('is installed (the manifest tests render with `kubectl kustomize`)', () => {
    let version: string;
    try {
      version = execFileSync(kubectlBinary(), ['version', '--client'], { encoding: 'utf8' });
    } catch (e) {
      throw new Error(
        `kubectl is required by the manifest tests and could not run ("${kubectlBinary()}"): ` +
          `${(e as Error).message}. Install kubectl or set KUBECTL.`,
        { cause: e },
      );
    }
    expect(version).toMatch(/Kustomize Version|Client Version/);
  });
});

describe('every YAML file under knative/', () => {
  const files = yamlFiles(KNATIVE_DIR);

  it('exists (the tree is not empty)', () => {
    expect(files.length).toBeGreaterThanOrEqual(20);
  });

  it.each(files.map((f) => [path.relative(KNATIVE_DIR, f), f]))(
    '%s parses into documents with apiVersion and kind',
    (_rel, file) => {
      const docs = parseAllDocuments(readFileSync(file, 'utf8'));
      expect(docs.length).toBeGreaterThan(0);
      for (const doc of docs) {
        expect(doc.errors.map((e) => e.message)).toEqual([]);
        const value = doc.toJS() as Record<string, unknown>;
        expect(typeof value.apiVersion).toBe('string');
        expect(typeof value.kind).toBe('string');
      }
    },
  );
});

describe('kustomize renders', () => {
  it.each([
    [BASE, [...CORE_OBJECTS, ...COZYSTACK_OBJECTS, ...HEAL_OBJECTS, ...POLICY_OBJECTS]],
    [OBSERVE, [...CORE_OBJECTS, ...COZYSTACK_OBJECTS, ...HEAL_OBJECTS, ...POLICY_OBJECTS]],
    [FLUX_ONLY, [...CORE_OBJECTS, ...HEAL_OBJECTS, ...POLICY_OBJECTS]],
  ])('%s into exactly the expected objects', (dir, expected) => {
    expect(keys(renderKustomize(dir))).toEqual([...expected].sort());
  });

  it.each([BASE, OBSERVE, FLUX_ONLY])(
    '%s: namespaced objects in source-watcher-recovery, part-of label on all',
    (dir) => {
      for (const o of renderKustomize(dir)) {
        const expectedNs = CLUSTER_SCOPED.has(o.kind) ? undefined : RECOVERY_NAMESPACE;
        expect(o.metadata.namespace, key(o)).toBe(expectedNs);
        expect(o.metadata.labels?.['app.kubernetes.io/part-of'], key(o)).toBe(
          'source-watcher-recovery',
        );
      }
    },
  );

  it('the kubectl-free loader sees the same Triggers and RBAC as kustomize', () => {
    const rendered = renderKustomize(BASE);
    const plain = loadKustomizationResources(KNATIVE_DIR);
    // The plain reader sees listed files only, not the generated recovery-config.
    expect(keys(plain)).toEqual(keys(rendered.filter((o) => !isRecoveryConfig(o))));
    const triggers = (objects: readonly K8sObject[]): TriggerSpec[] =>
      toKnativeManifests(objects).triggers.sort((x, y) => x.name.localeCompare(y.name));
    expect(triggers(plain)).toEqual(triggers(rendered));
    for (const sa of [
      'detect',
      'force-drift',
      'surface-stalled',
      'dead-letter',
      'apiserversource',
      'heal-external-artifacts',
    ]) {
      const bySource = (rules: PolicyRule[]): string[] =>
        rules.map((r) => JSON.stringify(r)).sort();
      expect(bySource(loadRbacRules(sa, plain)), sa).toEqual(bySource(loadRbacRules(sa, rendered)));
    }
  });
});

describe('overlays', () => {
  const modeOf = (objects: readonly K8sObject[]): string =>
    recoveryConfig(objects).RECOVERY_MODE ?? '';
  /** The ConfigMaps every Knative Service's container reads (envFrom). */
  const configsRead = (objects: readonly K8sObject[]): string[] =>
    objects
      .filter((o) => o.kind === 'Service' && o.apiVersion === 'serving.knative.dev/v1')
      .flatMap((o) =>
        (
          o.spec as {
            template: {
              spec: { containers: { envFrom?: { configMapRef?: { name: string } }[] }[] };
            };
          }
        ).template.spec.containers.flatMap((c) =>
          (c.envFrom ?? []).flatMap((e) => (e.configMapRef ? [e.configMapRef.name] : [])),
        ),
      );

  it.each([
    [BASE, 'enforce'],
    [OBSERVE, 'observe'],
    [FLUX_ONLY, 'enforce'],
  ])(
    '%s: RECOVERY_MODE=%s, in the hashed recovery-config every Service reads (rolls a Revision)',
    (dir, mode) => {
      const objects = renderKustomize(dir);
      expect(modeOf(objects)).toBe(mode);
      const names = configsRead(objects);
      expect(names.length).toBeGreaterThanOrEqual(3);
      expect(new Set(names)).toEqual(new Set([findRecoveryConfig(objects).metadata.name]));
    },
  );

  it('observe changes nothing but the mode and the write grants', () => {
    const normalize = (objects: readonly K8sObject[]): string =>
      JSON.stringify(objects)
        // Another content, another hashed name (tested in config-generator.test.ts).
        .replace(/recovery-config-[a-z0-9]{10}/g, 'recovery-config')
        .replaceAll('"RECOVERY_MODE":"observe"', '"RECOVERY_MODE":"enforce"');
    const sortByKey = (objects: readonly K8sObject[]): K8sObject[] =>
      [...objects].sort((a, b) => key(a).localeCompare(key(b)));
    // The read-only ClusterRoles are checked in rbac.test.ts.
    const readOnly = new Set([
      'ClusterRole/source-watcher-recovery-force-drift',
      'ClusterRole/source-watcher-recovery-surface-stalled',
      'ClusterRole/source-watcher-recovery-heal-external-artifacts',
    ]);
    const rest = (objects: readonly K8sObject[]): K8sObject[] =>
      sortByKey(objects.filter((o) => !readOnly.has(key(o))));
    expect(normalize(rest(renderKustomize(OBSERVE)))).toBe(normalize(rest(renderKustomize(BASE))));
  });

  it('flux-only is the base minus surface-stalled, the rest unchanged', () => {
    const base = renderKustomize(BASE);
    const fluxOnly = renderKustomize(FLUX_ONLY);
    const removed = keys(base).filter((k) => !keys(fluxOnly).includes(k));
    expect(removed).toEqual([...COZYSTACK_OBJECTS].sort());
    for (const o of fluxOnly) {
      expect(o, key(o)).toEqual(base.find((b) => key(b) === key(o)));
    }
    expect(loadRbacRules('surface-stalled', fluxOnly)).toEqual([]);
    expect(
      loadRbacRules('force-drift', fluxOnly).filter((r) => r.apiGroups.includes('cozystack.io')),
    ).toEqual([]);
  });
});

describe('image override', () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'swr-overlay-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('a user overlay with `images:` retargets every Service (one image, kustomize knob)', () => {
    writeFileSync(
      path.join(tmp, 'kustomization.yaml'),
      [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        'resources:',
        `  - ${path.relative(tmp, KNATIVE_DIR)}`,
        'images:',
        '  - name: ghcr.io/cozystack/source-watcher-recovery',
        '    newName: registry.example.com/mirror/source-watcher-recovery',
        '    newTag: 9.8.7',
        '',
      ].join('\n'),
    );
    const services = renderKustomize(tmp).filter((o) => o.kind === 'Service');
    expect(services.map((s) => s.metadata.name).sort()).toEqual([
      'dead-letter',
      'detect',
      'force-drift',
      'heal-external-artifacts',
      'surface-stalled',
    ]);
    for (const s of services) {
      const containers = (s.spec as { template: { spec: { containers: { image: string }[] } } })
        .template.spec.containers;
      expect(containers.map((c) => c.image)).toEqual([
        'registry.example.com/mirror/source-watcher-recovery:9.8.7',
      ]);
    }
  });
});
