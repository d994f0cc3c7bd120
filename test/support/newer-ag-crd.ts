// The test cluster serves source-watcher v2.1's ArtifactGenerator CRD (test/crds). Newer
// source-watchers add optional spec fields the heal reads (docs/adr/0054): spec.pathPattern (2.2)
// and spec.serviceAccountName (2.3). This adds them to the served schema, additively and
// idempotently (no field is changed or removed), so that the API server keeps them, and resolves
// once it does (a probe AG in `namespace` keeps both). The test cluster's installer adds them
// already (withNewerAgFields), so this normally only probes.

import * as k8s from '@kubernetes/client-node';
import { AG_CRD_NAME, NEWER_AG_FIELDS } from '../setup/install-crds.js';
import { customObjects } from './apiserver.js';

const CRD = AG_CRD_NAME;
const AG = {
  group: 'source.extensions.fluxcd.io',
  version: 'v1beta1',
  plural: 'artifactgenerators',
};
const JSON_PATCH = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch);
const FIELDS = NEWER_AG_FIELDS;
export async function ensureNewerAgFields(kc: k8s.KubeConfig, namespace: string): Promise<void> {
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const crd = await ext.readCustomResourceDefinition({ name: CRD });
  const at = crd.spec.versions.findIndex((v) => v.name === AG.version);
  const props = crd.spec.versions[at]?.schema?.openAPIV3Schema?.properties?.['spec']?.properties;
  const base = `/spec/versions/${at}/schema/openAPIV3Schema/properties/spec/properties`;
  const add = Object.entries(FIELDS)
    .filter(([field]) => props?.[field] === undefined)
    .map(([field, value]) => ({ op: 'add', path: `${base}/${field}`, value }));
  if (add.length > 0) await ext.patchCustomResourceDefinition({ name: CRD, body: add }, JSON_PATCH);
  const api = customObjects(kc);
  for (let i = 0; i < 50; i++) {
    const name = `probe-${Date.now().toString(36)}-${i}`;
    const probe = (await api.createNamespacedCustomObject({
      ...AG,
      namespace,
      body: {
        apiVersion: `${AG.group}/${AG.version}`,
        kind: 'ArtifactGenerator',
        metadata: { name, namespace },
        spec: {
          sources: [{ alias: 'src', kind: 'OCIRepository', name }],
          pathPattern: '@src/{x}',
          serviceAccountName: 'probe',
          artifacts: [{ name: 'probe', copy: [{ from: '@src/**', to: '@artifact/' }] }],
        },
      },
    })) as { spec?: Record<string, unknown> };
    await api.deleteNamespacedCustomObject({ ...AG, namespace, name }).catch(() => undefined);
    if (Object.keys(FIELDS).every((f) => probe.spec?.[f] !== undefined)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the API server does not keep spec.${Object.keys(FIELDS).join(', spec.')}`);
}
