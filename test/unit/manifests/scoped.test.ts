// knative/overlays/scoped (docs/adr/0055, docs/operations.md): the namespace list is written in
// three places (a namespaces/<name>/ directory each, RECOVERY_NAMESPACES, the ApiServerSource's
// namespaceSelector) and they must agree; no ServiceAccount of the overlay holds a rule on AGs
// outside the list; the selector has the shape of the real ApiServerSource CRD's.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  findObject,
  loadRbacRules,
  objectsOfKind,
  renderKustomize,
  type K8sObject,
} from '../../support/manifests.js';
import { CARRIED_CRD_DIR } from '../../support/carried-files.js';
import { recoveryConfig } from './renders.js';

const SCOPED = 'knative/overlays/scoped';
const objects = (): K8sObject[] => renderKustomize(SCOPED);
const listed = (): string[] => (recoveryConfig(objects()).RECOVERY_NAMESPACES ?? '').split(',');

describe('knative/overlays/scoped', () => {
  it('lists namespaces, and holds detect, force-drift, dead-letter and the AG source only', () => {
    expect(listed().length).toBeGreaterThan(0);
    expect(
      objectsOfKind(objects(), 'ServiceAccount')
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(['apiserversource', 'dead-letter', 'detect', 'force-drift']);
    expect(objectsOfKind(objects(), 'ApiServerSource').map((o) => o.metadata.name)).toEqual([
      'artifactgenerators',
    ]);
  });

  it('the ApiServerSource watches exactly the listed namespaces', () => {
    const source = findObject(objects(), 'ApiServerSource', 'artifactgenerators');
    expect((source['spec'] as { namespaceSelector?: unknown }).namespaceSelector).toEqual({
      matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: listed() }],
    });
  });

  it("the selector uses only fields of the real CRD's namespaceSelector", () => {
    const crd = parse(
      readFileSync(
        path.join(CARRIED_CRD_DIR, 'knative-eventing-v1.20', 'eventing-apiserversource.yaml'),
        'utf8',
      ),
    ) as {
      spec: {
        versions: {
          schema: {
            openAPIV3Schema: {
              properties: {
                spec: {
                  properties: Record<
                    string,
                    {
                      properties: Record<
                        string,
                        { items?: { properties: Record<string, unknown> } }
                      >;
                    }
                  >;
                };
              };
            };
          };
        }[];
      };
    };
    const selector =
      crd.spec.versions[0]?.schema.openAPIV3Schema.properties.spec.properties['namespaceSelector'];
    const expression = selector?.properties['matchExpressions']?.items?.properties ?? {};
    expect(Object.keys(expression).sort()).toEqual(['key', 'operator', 'values']);
  });

  it.each(['detect', 'force-drift', 'apiserversource'])(
    '%s holds no AG rule outside the listed namespaces',
    (sa) => {
      const rules = loadRbacRules(sa, objects()).filter((r) =>
        r.resources.some((res) => res.startsWith('artifactgenerators')),
      );
      expect(rules.length).toBeGreaterThan(0);
      expect([...new Set(rules.map((r) => r.namespace))].sort()).toEqual([...listed()].sort());
    },
  );

  it('every namespaces/<name>/ directory is listed, and every listed namespace has one', () => {
    const rolebindingNamespaces = objectsOfKind(objects(), 'RoleBinding')
      .filter((b) => b.metadata.name !== 'detect-alarm')
      .map((b) => b.metadata.namespace);
    expect([...new Set(rolebindingNamespaces)].sort()).toEqual([...listed()].sort());
  });
});
