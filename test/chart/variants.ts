// The settings the chart offers that change which objects knative/ renders, and one kustomize
// render per combination of them. Each combination is a kustomization written to a temporary
// directory, assembled from the shipped entry points only (knative/, overlays/observe,
// overlays/flux-only, overlays/sender-auth), so the chart follows them when they change:
//   observe                the patches of overlays/observe
//   surfaceStalled=false   the resources of overlays/flux-only (no cozystack/)
//   healExternalArtifacts=false  knative/'s components without components/heal-external-artifacts
//   senderAuth             the components of overlays/sender-auth
// Every render also sets `namespace:` to a placeholder (NAMESPACE_TOKEN), which the templates
// replace with the chart's namespace value (docs/adr/0065).

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
/** YAML 1.1, as Helm reads it (its "on" is a boolean), without line folding. */
const YAML_OPTIONS = { lineWidth: 0, version: '1.1' } as const;
import { KNATIVE_DIR, renderKustomize, type K8sObject } from '../support/manifests.js';

export const FLAGS = ['observe', 'surfaceStalled', 'healExternalArtifacts', 'senderAuth'] as const;
export type Flag = (typeof FLAGS)[number];
export type Settings = Readonly<Record<Flag, boolean>>;

/** What `knative/` is: the chart's defaults. */
export const DEFAULT_SETTINGS: Settings = {
  observe: false,
  surfaceStalled: true,
  healExternalArtifacts: true,
  senderAuth: false,
};

/** The namespace every variant is rendered into; the templates put the chart's value there. */
export const NAMESPACE_TOKEN = 'swrchartnamespace';

const HEAL_COMPONENT = path.join(KNATIVE_DIR, 'components', 'heal-external-artifacts');

interface Kustomization {
  resources?: string[];
  components?: string[];
  patches?: Array<Record<string, unknown>>;
}

function readKustomization(dir: string): { dir: string; k: Kustomization } {
  const file = path.join(KNATIVE_DIR, dir, 'kustomization.yaml');
  return {
    dir: path.join(KNATIVE_DIR, dir),
    k: parse(readFileSync(file, 'utf8')) as Kustomization,
  };
}

/** Absolute paths of a kustomization's resources or components. */
function entries(source: { dir: string; k: Kustomization }, field: 'resources' | 'components') {
  return (source.k[field] ?? []).map((entry) => path.resolve(source.dir, entry));
}

/** A patch list with file patches inlined (the temporary directory cannot reach the files). */
function inlinePatches(source: { dir: string; k: Kustomization }): Array<Record<string, unknown>> {
  return (source.k.patches ?? []).map((p) => {
    if (typeof p.path !== 'string') return p;
    const { path: file, ...rest } = p;
    return { ...rest, patch: readFileSync(path.resolve(source.dir, file as string), 'utf8') };
  });
}

/** Every combination of the flags, the defaults first. */
export function allSettings(): Settings[] {
  const out: Settings[] = [];
  for (let bits = 0; bits < 1 << FLAGS.length; bits++) {
    const s = Object.fromEntries(
      FLAGS.map((flag, i) => [
        flag,
        ((bits >> i) & 1) === 1 ? !DEFAULT_SETTINGS[flag] : DEFAULT_SETTINGS[flag],
      ]),
    ) as Settings;
    out.push(s);
  }
  return out;
}

/** The kustomization (as YAML) that renders one combination, for a directory `at`. */
export function kustomizationFor(settings: Settings, at: string): string {
  const base = readKustomization('.');
  const fluxOnly = readKustomization('overlays/flux-only');
  const senderAuth = readKustomization('overlays/sender-auth');
  const observe = readKustomization('overlays/observe');
  const resources = entries(settings.surfaceStalled ? base : fluxOnly, 'resources');
  const components = entries(settings.senderAuth ? senderAuth : base, 'components').filter(
    (c) => settings.healExternalArtifacts || c !== HEAL_COMPONENT,
  );
  const rel = (p: string) => path.relative(at, p);
  const k: Record<string, unknown> = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    namespace: NAMESPACE_TOKEN,
    resources: resources.map(rel),
    components: components.map(rel),
  };
  if (settings.observe) k.patches = inlinePatches(observe);
  return stringify(k, YAML_OPTIONS);
}

/** `kubectl kustomize` of one combination. */
export function renderSettings(settings: Settings): K8sObject[] {
  const dir = mkdtempSync(path.join(tmpdir(), 'swr-chart-'));
  try {
    writeFileSync(path.join(dir, 'kustomization.yaml'), kustomizationFor(settings, dir));
    return renderKustomize(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
