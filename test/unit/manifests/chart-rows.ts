// The rows of settings the Helm chart (knative/chart/source-watcher-recovery, docs/adr/0065) is
// tested with: each row's values and the `kubectl kustomize` render (an entry point, or an overlay
// of one that a user would write) its `helm template` must equal (chart.test.ts). The Knative
// webhook test (knative-webhook.test.ts) runs Serving's own checks on each row's render.

import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { CHART_DIR } from '../../chart/generate.js';
import {
  groupOf,
  loadKustomizationResources,
  renderKustomize,
  REPO_ROOT,
  type K8sObject,
} from '../../support/manifests.js';
import { BASE, FLUX_ONLY, OBSERVE, OFF } from './renders.js';

export const SENDER_AUTH = 'knative/overlays/sender-auth';
export const SCOPED = 'knative/overlays/scoped';
const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;

/** An overlay of one entry point, as a user would write it: `kubectl kustomize` of it. */
function overlay(
  workDir: string,
  name: string,
  of: string,
  extra: Record<string, unknown>,
): K8sObject[] {
  const dir = path.join(workDir, name);
  const k = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: [path.relative(dir, path.join(REPO_ROOT, of))],
    ...extra,
  };
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'kustomization.yaml'), stringify(k));
  return renderKustomize(dir);
}

export const keyOf = (o: K8sObject) =>
  `${groupOf(o.apiVersion)}/${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

export const healObjects = new Set(
  loadKustomizationResources('knative/functions/heal-external-artifacts').map(keyOf),
);

export interface ChartRow {
  name: string;
  values: Record<string, unknown>;
  /** The kustomize render it must equal; a user's overlay is written under workDir. */
  kustomize: (workDir: string) => K8sObject[];
}

export const CHART_ROWS: ChartRow[] = [
  { name: 'defaults = knative/', values: {}, kustomize: () => renderKustomize(BASE) },
  {
    name: 'mode observe = overlays/observe',
    values: { mode: 'observe' },
    kustomize: () => renderKustomize(OBSERVE),
  },
  {
    name: 'mode off = overlays/off',
    values: { mode: 'off' },
    kustomize: () => renderKustomize(OFF),
  },
  {
    name: 'off in another namespace = overlays/off with namespace:',
    values: { mode: 'off', namespace: { name: 'cozy-swr' } },
    kustomize: (w) => overlay(w, 'off-ns', OFF, { namespace: 'cozy-swr' }),
  },
  {
    // The overlay's list (cozy-system, flux-apps); scoped leaves out surface-stalled and heal.
    name: 'scope.namespaces = overlays/scoped',
    values: { scope: { namespaces: ['cozy-system', 'flux-apps'] } },
    kustomize: () => renderKustomize(SCOPED),
  },
  {
    name: 'surface-stalled off = overlays/flux-only',
    values: { functions: { surfaceStalled: false } },
    kustomize: () => renderKustomize(FLUX_ONLY),
  },
  {
    name: 'sender-auth = overlays/sender-auth',
    values: { senderAuth: { enabled: true } },
    kustomize: () => renderKustomize(SENDER_AUTH),
  },
  {
    // A moved sender-authenticated install as docs/operations.md writes it (ADR 68): its
    // follow-namespace.yaml replacements, inline here.
    name: 'sender-auth in another namespace = overlays/sender-auth with namespace: and follow-namespace.yaml',
    values: { senderAuth: { enabled: true }, namespace: { name: 'cozy-swr' } },
    kustomize: (w) =>
      overlay(w, 'sender-auth-ns', SENDER_AUTH, {
        namespace: 'cozy-swr',
        replacements: parse(
          readFileSync(
            path.join(REPO_ROOT, 'knative/components/sender-auth/follow-namespace.yaml'),
            'utf8',
          ),
        ) as unknown,
      }),
  },
  {
    name: 'another namespace = knative/ with namespace:',
    values: { namespace: { name: 'cozy-source-watcher-recovery' } },
    kustomize: (w) => overlay(w, 'ns', BASE, { namespace: 'cozy-source-watcher-recovery' }),
  },
  {
    name: 'values-cozystack.yaml = knative/ with namespace: cozy-source-watcher-recovery',
    values: parse(readFileSync(path.join(CHART_DIR, 'values-cozystack.yaml'), 'utf8')) as Record<
      string,
      unknown
    >,
    kustomize: (w) => overlay(w, 'cozystack', BASE, { namespace: 'cozy-source-watcher-recovery' }),
  },
  {
    name: 'observe in another namespace = overlays/observe with namespace:',
    values: { mode: 'observe', namespace: { name: 'cozy-swr' } },
    kustomize: (w) => overlay(w, 'observe-ns', OBSERVE, { namespace: 'cozy-swr' }),
  },
  {
    name: 'flux-only in another namespace = overlays/flux-only with namespace:',
    values: { functions: { surfaceStalled: false }, namespace: { name: 'flux-recovery' } },
    kustomize: (w) => overlay(w, 'flux-ns', FLUX_ONLY, { namespace: 'flux-recovery' }),
  },
  {
    name: 'image by digest = knative/ with images: digest',
    values: { image: { repository: 'registry.example.com/you/swr', digest: DIGEST } },
    kustomize: (w) =>
      overlay(w, 'digest', BASE, {
        images: [
          {
            name: 'ghcr.io/cozystack/source-watcher-recovery',
            newName: 'registry.example.com/you/swr',
            digest: DIGEST,
          },
        ],
      }),
  },
  {
    name: 'image tag = knative/ with images: newTag',
    values: { image: { tag: '0.2.0-rc.1' } },
    kustomize: (w) =>
      overlay(w, 'tag', BASE, {
        images: [{ name: 'ghcr.io/cozystack/source-watcher-recovery', newTag: '0.2.0-rc.1' }],
      }),
  },
  {
    name: 'configuration = knative/ with a recovery-config patch',
    values: {
      config: { RECOVERY_GRACE_PERIOD: '5m', RECOVERY_MAX_ATTEMPTS: 7, LOG_LEVEL: 'debug' },
    },
    kustomize: (w) =>
      overlay(w, 'config', BASE, {
        patches: [
          {
            patch: stringify({
              apiVersion: 'v1',
              kind: 'ConfigMap',
              metadata: { name: 'recovery-config', namespace: 'source-watcher-recovery' },
              data: { RECOVERY_GRACE_PERIOD: '5m', RECOVERY_MAX_ATTEMPTS: '7', LOG_LEVEL: 'debug' },
            }),
          },
        ],
      }),
  },
  {
    name: 'namespace made elsewhere = knative/ without its Namespace',
    values: { namespace: { create: false } },
    kustomize: (w) =>
      overlay(w, 'no-ns', BASE, {
        patches: [
          {
            patch: stringify({
              $patch: 'delete',
              apiVersion: 'v1',
              kind: 'Namespace',
              metadata: { name: 'source-watcher-recovery' },
            }),
          },
        ],
      }),
  },
  {
    // No entry point leaves heal-external-artifacts out: knative/ less the component's own objects.
    name: 'heal-external-artifacts off = knative/ less functions/heal-external-artifacts',
    values: { functions: { healExternalArtifacts: false } },
    kustomize: () => renderKustomize(BASE).filter((o) => !healObjects.has(keyOf(o))),
  },
];
