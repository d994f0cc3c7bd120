// The settings the chart offers that change which objects knative/ renders, and one kustomize
// render per combination of them. Each combination is a kustomization written to a temporary
// directory, assembled from the shipped entry points only (knative/, overlays/observe,
// overlays/off, overlays/flux-only, overlays/sender-auth), so the chart follows them when they
// change:
//   observe                overlays/observe's own fields (patches, generators, …)
//   off                    overlays/off's own fields (never with observe: both are the mode)
//   surfaceStalled=false   without the function Components overlays/flux-only leaves out
//                          (functions/surface-stalled, functions/force-drift/cozystack)
//   healExternalArtifacts=false  without functions/heal-external-artifacts
//   senderAuth             with the components overlays/sender-auth adds
//   scoped                 overlays/scoped's own fields and grants, for one namespace SCOPE_TOKEN
//                          (only with surfaceStalled and healExternalArtifacts off, as the
//                          overlay is); the templates repeat the grants per listed namespace
// Every render also sets `namespace:` to a placeholder (NAMESPACE_TOKEN), which the templates
// replace with the chart's namespace value (docs/adr/0065).

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
/** YAML 1.1, as Helm reads it (its "on" is a boolean), without line folding. */
const YAML_OPTIONS = { lineWidth: 0, version: '1.1' } as const;
import { execFileSync } from 'node:child_process';
import {
  KNATIVE_DIR,
  RECOVERY_NAMESPACE,
  kubectlBinary,
  parseManifests,
  type K8sObject,
} from '../support/manifests.js';

export const FLAGS = [
  'observe',
  'off',
  'surfaceStalled',
  'healExternalArtifacts',
  'senderAuth',
  'scoped',
] as const;
export type Flag = (typeof FLAGS)[number];
export type Settings = Readonly<Record<Flag, boolean>>;

/** What `knative/` is: the chart's defaults. */
export const DEFAULT_SETTINGS: Settings = {
  observe: false,
  off: false,
  surfaceStalled: true,
  healExternalArtifacts: true,
  senderAuth: false,
  scoped: false,
};

/** The namespace every variant is rendered into; the templates put the chart's value there. */
export const NAMESPACE_TOKEN = 'swrchartnamespace';
/** The one watched namespace of a scoped render; the templates put each listed namespace there. */
export const SCOPE_TOKEN = 'swrchartscope';
const SCOPED_DIR = 'overlays/scoped';

const HEAL_COMPONENT = path.join(KNATIVE_DIR, 'functions', 'heal-external-artifacts');

type Kustomization = Record<string, unknown> & { resources?: string[]; components?: string[] };
interface Source {
  dir: string;
  k: Kustomization;
}

function readKustomization(dir: string): Source {
  const file = path.join(KNATIVE_DIR, dir, 'kustomization.yaml');
  return {
    dir: path.join(KNATIVE_DIR, dir),
    k: parse(readFileSync(file, 'utf8')) as Kustomization,
  };
}

/** Absolute paths of a kustomization's resources or components. */
function entries(source: Source, field: 'resources' | 'components'): string[] {
  return (source.k[field] ?? []).map((entry) => path.resolve(source.dir, entry));
}

/**
 * A kustomization's own fields (patches, generators, replacements, …) with the files they name
 * made absolute, for a kustomization elsewhere (rendered with LoadRestrictionsNone).
 */
function ownFields(source: Source): Record<string, unknown> {
  const abs = (f: string) => {
    const eq = f.indexOf('=');
    return eq < 0
      ? path.resolve(source.dir, f)
      : `${f.slice(0, eq)}=${path.resolve(source.dir, f.slice(eq + 1))}`;
  };
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(source.k)) {
    if (['apiVersion', 'kind', 'resources', 'components'].includes(key)) continue;
    if (key === 'patches' && Array.isArray(value)) {
      out[key] = value.map((p: Record<string, unknown>) =>
        typeof p.path === 'string' ? { ...p, path: path.resolve(source.dir, p.path) } : p,
      );
    } else if (
      (key === 'configMapGenerator' || key === 'secretGenerator') &&
      Array.isArray(value)
    ) {
      out[key] = value.map((g: Record<string, unknown>) => ({
        ...g,
        ...(Array.isArray(g.envs) ? { envs: (g.envs as string[]).map(abs) } : {}),
        ...(Array.isArray(g.files) ? { files: (g.files as string[]).map(abs) } : {}),
      }));
    } else {
      out[key] = value;
    }
  }
  return out;
}

/** Every combination of the flags that the values can say, the defaults first. */
export function allSettings(): Settings[] {
  const out: Settings[] = [];
  for (let bits = 0; bits < 1 << FLAGS.length; bits++) {
    const s = Object.fromEntries(
      FLAGS.map((flag, i) => [
        flag,
        ((bits >> i) & 1) === 1 ? !DEFAULT_SETTINGS[flag] : DEFAULT_SETTINGS[flag],
      ]),
    ) as Settings;
    // observe and off are two values of one `mode`; a scoped install has neither surface-stalled
    // nor heal-external-artifacts (knative/overlays/scoped).
    if (s.observe && s.off) continue;
    if (s.scoped && (s.surfaceStalled || s.healExternalArtifacts)) continue;
    out.push(s);
  }
  return out;
}

/** knative/components/sender-auth/follow-namespace.yaml's replacements, inline. */
function followNamespace(): unknown[] {
  const file = path.join(KNATIVE_DIR, 'components', 'sender-auth', 'follow-namespace.yaml');
  return parse(readFileSync(file, 'utf8')) as unknown[];
}

/**
 * The kustomization (as YAML) that renders one combination, for a directory `at`: knative/'s, or
 * overlays/observe's or overlays/off's with all its own fields; without the components
 * overlays/flux-only leaves out of knative/'s (functions/surface-stalled,
 * functions/force-drift/cozystack) when surface-stalled is off; with the components
 * overlays/sender-auth adds to knative/'s, in its order, when sender-auth is on; without
 * functions/heal-external-artifacts when that is off.
 */
export function kustomizationFor(settings: Settings, at: string): string {
  const base = readKustomization('.');
  const host = settings.observe
    ? readKustomization('overlays/observe')
    : settings.off
      ? readKustomization('overlays/off')
      : base;
  // What knative/ lists and overlays/flux-only does not: the Cozystack-only function Components.
  const listed = (source: Source) => [
    ...entries(source, 'resources'),
    ...entries(source, 'components'),
  ];
  const cozystackOnly = new Set(listed(base));
  for (const e of listed(readKustomization('overlays/flux-only'))) cozystackOnly.delete(e);
  const resources = entries(host, 'resources').filter(
    (r) => settings.surfaceStalled || !cozystackOnly.has(r),
  );
  const hostComponents = new Set(entries(host, 'components'));
  const baseComponents = new Set(entries(base, 'components'));
  const components = (
    settings.senderAuth
      ? entries(readKustomization('overlays/sender-auth'), 'components').filter(
          (c) => hostComponents.has(c) || !baseComponents.has(c),
        )
      : [...hostComponents]
  )
    .filter((c) => settings.surfaceStalled || !cozystackOnly.has(c))
    .filter((c) => settings.healExternalArtifacts || c !== HEAL_COMPONENT);
  const rel = (p: string) => path.relative(at, p);
  const own = ownFields(host);
  const scope = settings.scoped ? scopedParts() : undefined;
  if (scope !== undefined) {
    own.patches = [...((own.patches as unknown[] | undefined) ?? []), ...scope.patches];
  }
  if (settings.senderAuth) {
    // As a moved install's overlay lists it (docs/adr/0068): the EventPolicy's subs then carry
    // the namespace token, which the templates make the chart's namespace.
    own.replacements = [
      ...((own.replacements as unknown[] | undefined) ?? []),
      ...followNamespace(),
    ];
  }
  const k: Record<string, unknown> = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    ...own,
    namespace: NAMESPACE_TOKEN,
    resources: resources.map(rel),
    components: components.map(rel),
  };
  return stringify(k, YAML_OPTIONS);
}

/**
 * overlays/scoped for the chart: its patches with its namespace list (the names of its
 * namespaces/ resources) put as the one SCOPE_TOKEN (its grants are rendered in SCOPE_TOKEN by
 * writeScope). Fails when the list is not where it was.
 */
function scopedParts(): { patches: unknown[] } {
  const scoped = readKustomization(SCOPED_DIR);
  const listed = entries(scoped, 'resources').filter((r) =>
    r.includes(`${path.sep}namespaces${path.sep}`),
  );
  const names = listed.map((r) => path.basename(r));
  if (names.length === 0) throw new Error(`${SCOPED_DIR}: no namespaces/ resources`);
  const lists = [names.join(','), `[${names.join(', ')}]`];
  const patches = ((ownFields(scoped).patches as Record<string, unknown>[] | undefined) ?? []).map(
    (p) => {
      if (typeof p.patch !== 'string') return p;
      let text = p.patch;
      for (const l of lists)
        text = text.replaceAll(l, l.startsWith('[') ? `[${SCOPE_TOKEN}]` : SCOPE_TOKEN);
      return { ...p, patch: text };
    },
  );
  const text = JSON.stringify(patches);
  if (
    !text.includes(`"RECOVERY_NAMESPACES: ${SCOPE_TOKEN}`) &&
    !text.includes(`RECOVERY_NAMESPACES: ${SCOPE_TOKEN}`)
  ) {
    throw new Error(`${SCOPED_DIR}: RECOVERY_NAMESPACES is not the list of its namespaces/`);
  }
  if (!text.includes(`[${SCOPE_TOKEN}]`)) {
    throw new Error(
      `${SCOPED_DIR}: the ApiServerSource's values are not the list of its namespaces/`,
    );
  }
  return { patches };
}

/** The kustomization of the scoped render's one watched namespace (in `dir`/scope). */
function writeScope(dir: string): void {
  const scope = path.join(dir, 'scope');
  mkdirSync(scope, { recursive: true });
  const grants = path.join(KNATIVE_DIR, SCOPED_DIR, 'grants');
  writeFileSync(
    path.join(scope, 'kustomization.yaml'),
    stringify({ namespace: SCOPE_TOKEN, resources: [path.relative(scope, grants)] }, YAML_OPTIONS),
  );
}

/** `kubectl kustomize` of one combination. */
export function renderSettings(settings: Settings): K8sObject[] {
  const dir = mkdtempSync(path.join(tmpdir(), 'swr-chart-'));
  try {
    writeFileSync(path.join(dir, 'kustomization.yaml'), kustomizationFor(settings, dir));
    const what = `kustomize of the chart variant ${JSON.stringify(settings)}`;
    const objects = parseManifests(kustomize(dir), what);
    if (!settings.scoped) return objects;
    // The grants on their own: the variant's `namespace:` would move them to the install
    // namespace. Their subjects are the install's ServiceAccounts.
    writeScope(dir);
    const grants = parseManifests(kustomize(path.join(dir, 'scope')), what).map(
      (o) =>
        JSON.parse(
          JSON.stringify(o).replaceAll(
            `"namespace":"${RECOVERY_NAMESPACE}"`,
            `"namespace":"${NAMESPACE_TOKEN}"`,
          ),
        ) as K8sObject,
    );
    return [...objects, ...grants];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function kustomize(dir: string): string {
  return execFileSync(
    kubectlBinary(),
    ['kustomize', '--load-restrictor=LoadRestrictionsNone', dir],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
      maxBuffer: 16 * 1024 * 1024,
    },
  );
}
