// The deployment package against a real API server: every object `kubectl kustomize` renders for
// knative/ and for each overlay is sent as a server-side apply with dryRun=All and
// fieldValidation=Strict (what `kubectl apply --server-side --dry-run=server` does), as the admin.
// The API server checks each object against the real core and RBAC APIs, the upstream Knative
// Service CRD (knative.dev/serving), and the verbatim Knative Eventing v1.20 CRDs of
// test/third_party/crds/ (docs/adr/0031-upstream-crds.md). An unknown or misspelt field, a wrong type, a missing required field or an
// unknown kind fails the test. Nothing is persisted.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHART_DIR } from '../chart/generate.js';
import { testKubeConfig } from '../support/apiserver.js';
import { helmTemplate } from '../support/helm.js';
import {
  KNATIVE_DIR,
  parseManifests,
  renderKustomize,
  REPO_ROOT,
  type K8sObject,
} from '../support/manifests.js';

const kc = testKubeConfig();
const FIELD_MANAGER = 'swr-dry-run';

const OVERLAYS_DIR = path.join(KNATIVE_DIR, 'overlays');
const PACKAGES = [
  'knative',
  ...readdirSync(OVERLAYS_DIR)
    .filter((d) => statSync(path.join(OVERLAYS_DIR, d)).isDirectory())
    .sort()
    .map((d) => `knative/overlays/${d}`),
];

interface Answer {
  status: number;
  body: string;
}

async function request(method: string, urlPath: string, body?: string, contentType?: string) {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error('no cluster in the test kubeconfig');
  const url = new URL(urlPath, cluster.server);
  const opts: https.RequestOptions = {
    method,
    hostname: url.hostname,
    port: url.port,
    path: `${url.pathname}${url.search}`,
    headers: {
      accept: 'application/json',
      ...(contentType === undefined ? {} : { 'content-type': contentType }),
    },
  };
  await kc.applyToHTTPSOptions(opts);
  return new Promise<Answer>((done, fail) => {
    const req = https.request(opts, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => done({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', fail);
    req.end(body);
  });
}

interface ResourceInfo {
  plural: string;
  namespaced: boolean;
}

const discovery = new Map<string, Map<string, ResourceInfo>>();

/** The resource of a kind from the API server's discovery (no kind is assumed to exist). */
async function resourceOf(apiVersion: string, kind: string): Promise<ResourceInfo> {
  let kinds = discovery.get(apiVersion);
  if (kinds === undefined) {
    const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    const answer = await request('GET', base);
    if (answer.status !== 200) {
      throw new Error(
        `${apiVersion} is not served by the test API server (GET ${base}: ${answer.status})`,
      );
    }
    const list = JSON.parse(answer.body) as {
      resources: { name: string; kind: string; namespaced: boolean }[];
    };
    kinds = new Map(
      list.resources
        .filter((r) => !r.name.includes('/'))
        .map((r) => [r.kind, { plural: r.name, namespaced: r.namespaced }]),
    );
    discovery.set(apiVersion, kinds);
  }
  const info = kinds.get(kind);
  if (info === undefined) throw new Error(`${apiVersion} serves no kind ${kind}`);
  return info;
}

/** Server-side apply, dry run, strict field validation. */
async function dryRunApply(o: K8sObject): Promise<Answer> {
  const { plural, namespaced } = await resourceOf(o.apiVersion, o.kind);
  const base = o.apiVersion.includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
  const ns = o.metadata.namespace;
  if (namespaced && (ns === undefined || ns === '')) {
    return { status: 0, body: `${o.kind} ${o.metadata.name} is namespaced but names no namespace` };
  }
  const scope = namespaced ? `/namespaces/${ns}` : '';
  const query = `dryRun=All&fieldManager=${FIELD_MANAGER}&force=true&fieldValidation=Strict`;
  return request(
    'PATCH',
    `${base}${scope}/${plural}/${o.metadata.name}?${query}`,
    JSON.stringify(o),
    'application/apply-patch+yaml',
  );
}

function describeObject(o: K8sObject): string {
  return `${o.apiVersion} ${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

describe('knative/ passes server-side dry-run against the real API server', () => {
  for (const pkg of PACKAGES) {
    it(`${pkg}: every rendered object is accepted`, async () => {
      const objects = renderKustomize(pkg);
      expect(objects.length).toBeGreaterThan(10);
      const rejected: string[] = [];
      const kinds = new Set<string>();
      for (const o of objects) {
        const answer = await dryRunApply(o);
        kinds.add(`${o.apiVersion} ${o.kind}`);
        if (answer.status !== 200 && answer.status !== 201) {
          rejected.push(`${describeObject(o)}: ${answer.status} ${answer.body.slice(0, 600)}`);
        }
      }
      expect(rejected, `${pkg}: objects the API server rejects`).toEqual([]);
      // The package really reached every API it ships for (the real core/RBAC API and the CRDs).
      for (const kind of [
        'v1 Namespace',
        'v1 ServiceAccount',
        'v1 ConfigMap',
        'rbac.authorization.k8s.io/v1 ClusterRole',
        'serving.knative.dev/v1 Service',
        // overlays/off ships no source and no Trigger (docs/adr/0067).
        ...(pkg.endsWith('/off')
          ? []
          : ['eventing.knative.dev/v1 Trigger', 'sources.knative.dev/v1 ApiServerSource']),
      ]) {
        expect(kinds, `${pkg} renders ${kind}`).toContain(kind);
      }
    });
  }

  it('the dry run is strict: a misspelt field, a wrong type and a missing field are rejected', async () => {
    const objects = renderKustomize('knative');
    const pick = (kind: string): K8sObject => {
      const found = objects.find((o) => o.kind === kind);
      if (found === undefined) throw new Error(`knative/ renders no ${kind}`);
      return structuredClone(found);
    };
    const service = pick('Service');
    (service['spec'] as Record<string, unknown>)['templat'] = {};
    // Knative's real Trigger schema requires nothing (its webhook does: a Trigger without a
    // subscriber passes the schema), so the wrong type is what the API server can refuse here.
    const trigger = pick('Trigger');
    (trigger['spec'] as Record<string, unknown>)['broker'] = 5;
    const source = pick('ApiServerSource');
    // Nor does its ApiServerSource schema enumerate the modes (the webhook checks them).
    (source['spec'] as Record<string, unknown>)['mode'] = ['Resource'];
    const noResources = pick('ApiServerSource');
    delete (noResources['spec'] as Record<string, unknown>)['resources'];
    const role = pick('ClusterRole');
    (role['rules'] as Record<string, unknown>[])[0]!['verbz'] = ['get'];
    const ping = pick('PingSource');
    (ping['spec'] as Record<string, unknown>)['schedule'] = 5;
    // Server-side apply answers a field the typed schema does not declare with 500 ("failed to
    // create typed patch object"), as kubectl sees it; the others with 422. Either way: refused,
    // naming the field.
    for (const [what, o, field] of [
      ['Knative Service with spec.templat', service, 'templat'],
      ['Trigger with a numeric broker', trigger, 'broker'],
      ['ApiServerSource with a list for its mode', source, 'mode'],
      ['ApiServerSource without resources', noResources, 'resources'],
      ['ClusterRole rule with verbz', role, 'verbz'],
      ['PingSource with a numeric schedule', ping, 'schedule'],
    ] as const) {
      const answer = await dryRunApply(o);
      expect(answer.status, `${what}: ${answer.body.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
      expect(answer.body, what).toContain(field);
    }
  });
});

// The Helm chart's renders (test/unit/manifests/chart.test.ts proves them equal to the kustomize
// ones; here they meet the real schemas themselves), for the settings that change objects.
describe('the Helm chart passes server-side dry-run against the real API server', () => {
  it.each([
    ['defaults', {}],
    ['mode observe', { mode: 'observe' }],
    [
      'surface-stalled and heal-external-artifacts off',
      { functions: { surfaceStalled: false, healExternalArtifacts: false } },
    ],
    [
      'sender-auth in another namespace',
      { senderAuth: { enabled: true }, namespace: { name: 'default' } },
    ],
    ['mode off', { mode: 'off' }],
    ['scoped, observe', { mode: 'observe', scope: { namespaces: ['cozy-system', 'flux-apps'] } }],
  ])('%s: every rendered object is accepted', async (_name, values) => {
    const objects = helmTemplate(CHART_DIR, values);
    expect(objects.length).toBeGreaterThan(10);
    const rejected: string[] = [];
    for (const o of objects) {
      const answer = await dryRunApply(o);
      if (answer.status !== 200 && answer.status !== 201) {
        rejected.push(`${describeObject(o)}: ${answer.status} ${answer.body.slice(0, 600)}`);
      }
    }
    expect(rejected).toEqual([]);
  });
});

// docs/install.md's examples fit the real schemas: the Flux sources (source-controller's CRDs), the
// Flux Kustomization and HelmRelease (kustomize-controller's and helm-controller's CRDs, generated
// from their API modules by test/crds/flux-toolkit/generate.sh) and the Cozystack PackageSource.
// Every YAML block of the page is applied; a kind the test cluster does not serve fails.
describe('docs/install.md: its example objects pass server-side dry-run', () => {
  const text = readFileSync(path.join(REPO_ROOT, 'docs', 'install.md'), 'utf8');
  const blocks = [...text.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? '');
  const objects = blocks.flatMap((b) => parseManifests(b, 'docs/install.md'));
  /** The schema is what is checked: namespaced examples go to a namespace that exists. */
  const placed = (o: K8sObject): K8sObject =>
    o.metadata.namespace === undefined
      ? o
      : { ...o, metadata: { ...o.metadata, namespace: 'default' } };

  it('every example is accepted, of every kind the page shows', async () => {
    const checked = new Set<string>();
    const rejected: string[] = [];
    for (const o of objects) {
      const answer = await dryRunApply(placed(o));
      checked.add(`${o.apiVersion} ${o.kind}`);
      if (answer.status !== 200 && answer.status !== 201) {
        rejected.push(`${describeObject(o)}: ${answer.status} ${answer.body.slice(0, 600)}`);
      }
    }
    expect(rejected).toEqual([]);
    expect([...checked].sort()).toEqual([
      'cozystack.io/v1alpha1 PackageSource',
      'helm.toolkit.fluxcd.io/v2 HelmRelease',
      'kustomize.toolkit.fluxcd.io/v1 Kustomization',
      'source.toolkit.fluxcd.io/v1 GitRepository',
      'source.toolkit.fluxcd.io/v1 OCIRepository',
    ]);
  });

  it.each([
    // dependsOn takes objects with a name, not names.
    ['Kustomization', ['spec', 'dependsOn'], ['knative-serving']],
    // sourceRef.kind is an enum of the source kinds.
    ['Kustomization', ['spec', 'sourceRef', 'kind'], 'GitRepo'],
    ['HelmRelease', ['spec', 'chart', 'spec', 'sourceRef', 'kind'], 'Git'],
    // A misspelt field (the dry run is strict).
    ['HelmRelease', ['spec', 'valuez'], {}],
  ])('the Flux schemas can refuse: %s with %j = %j', async (kind, at, value) => {
    const example = objects.find((o) => o.kind === kind) as K8sObject;
    const broken = structuredClone(placed(example)) as Record<string, unknown>;
    let node = broken;
    for (const k of at.slice(0, -1)) node = node[k] as Record<string, unknown>;
    node[at.at(-1) as string] = value;
    const answer = await dryRunApply(broken as K8sObject);
    expect(answer.status, answer.body.slice(0, 300)).toBeGreaterThanOrEqual(400);
  });
});
