// `npm run chart`: generates knative/chart/source-watcher-recovery from the kustomize renders of
// knative/ (test/chart/variants.ts, emit.ts; docs/adr/0065). `--check` writes nothing and exits 1
// when the committed chart differs from what it would write (test/unit/manifests/chart.test.ts
// runs the same comparison). Hand-written, not generated: Chart.yaml's description and
// templates/_helpers.tpl, values.schema.json, .helmignore (CHART_OWN_FILES).

import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { KNATIVE_DIR, REPO_ROOT } from '../support/manifests.js';
import { emit } from './emit.js';
import { valuesYaml, chartYaml } from './values.js';
import { allSettings, renderSettings } from './variants.js';

export const CHART_DIR = path.join(KNATIVE_DIR, 'chart', 'source-watcher-recovery');
/** The chart's files that no generator writes. */
export const CHART_OWN_FILES = ['templates/_helpers.tpl', 'values.schema.json', '.helmignore'];

/** The image the renders carry: components/image's newName:newTag. */
function imageOf(): { repository: string; tag: string } {
  const k = parse(
    readFileSync(path.join(KNATIVE_DIR, 'components/image/kustomization.yaml'), 'utf8'),
  ) as {
    images: Array<{ newName: string; newTag: string }>;
  };
  const [image] = k.images;
  if (image === undefined) throw new Error('components/image: no images entry');
  return { repository: image.newName, tag: image.newTag };
}

/** recovery-config keys some kustomization derives other fields from (replacements). */
function derivedKeys(): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== 'chart') walk(p);
      if (entry.name !== 'kustomization.yaml') continue;
      const k = parse(readFileSync(p, 'utf8')) as {
        replacements?: Array<{ source?: { kind?: string; name?: string; fieldPath?: string } }>;
      };
      for (const r of k.replacements ?? []) {
        const m = /^data\.(.+)$/.exec(r.source?.fieldPath ?? '');
        if (r.source?.kind === 'ConfigMap' && r.source.name === 'recovery-config' && m?.[1]) {
          const where = path.relative(KNATIVE_DIR, dir);
          out.set(m[1], `${where} derives other fields from it, which the chart does not follow`);
        }
      }
    }
  };
  walk(KNATIVE_DIR);
  return out;
}

/** Every generated file of the chart, by path inside the chart. */
export function generateChart(): Map<string, string> {
  const image = imageOf();
  const variants = allSettings().map((settings) => ({
    settings,
    objects: renderSettings(settings),
  }));
  const out = emit({
    variants,
    image: `${image.repository}:${image.tag}`,
    derivedKeys: derivedKeys(),
  });
  const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
    version: string;
  };
  const files = new Map<string, string>([
    ['Chart.yaml', chartYaml(pkg.version, image.tag)],
    ['values.yaml', valuesYaml(image, out.configDefaults)],
    ['templates/_config.tpl', out.configHelpers],
    ...out.templates,
  ]);
  return files;
}

/** Paths that differ between the generated chart and the one on disk (missing, extra, changed). */
export function staleFiles(files: ReadonlyMap<string, string>, dir: string = CHART_DIR): string[] {
  const stale: string[] = [];
  for (const [file, text] of files) {
    const p = path.join(dir, file);
    if (!existsSync(p) || readFileSync(p, 'utf8') !== text) stale.push(file);
  }
  const templates = path.join(dir, 'templates');
  for (const name of existsSync(templates) ? readdirSync(templates) : []) {
    const file = `templates/${name}`;
    if (!files.has(file) && !CHART_OWN_FILES.includes(file)) stale.push(file);
  }
  return stale;
}

function main(): void {
  const files = generateChart();
  if (process.argv.includes('--check')) {
    const stale = staleFiles(files);
    if (stale.length > 0) {
      console.error(`chart: stale (run npm run chart): ${stale.join(', ')}`);
      process.exit(1);
    }
    console.log('chart: up to date');
    return;
  }
  mkdirSync(path.join(CHART_DIR, 'templates'), { recursive: true });
  for (const name of readdirSync(path.join(CHART_DIR, 'templates'), { withFileTypes: true })) {
    const file = `templates/${name.name}`;
    if (!files.has(file) && !CHART_OWN_FILES.includes(file)) rmSync(path.join(CHART_DIR, file));
  }
  for (const [file, text] of files) {
    mkdirSync(path.dirname(path.join(CHART_DIR, file)), { recursive: true });
    writeFileSync(path.join(CHART_DIR, file), text);
  }
  console.log(`chart: wrote ${files.size} files into ${path.relative(REPO_ROOT, CHART_DIR)}`);
}

if (
  process.argv[1] !== undefined &&
  path.resolve(process.argv[1]) === path.resolve(import.meta.filename)
)
  main();
