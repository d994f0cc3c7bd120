// The image's recipe, read (docs/adr/0058-bundles-and-a-small-image.md): one build path
// (`npm run image` runs .ci/image/build.sh, and so does CI), no package manager and no install
// script in it, the Node of toolchain/ checked against its lock file, a numeric non-root user, the
// default command a real entry point; and the image reference in one kustomize `images:` entry that
// every install entry point includes. CI builds the image and runs it (test/image/).

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT, renderKustomize } from '../../support/manifests.js';
import { base, RENDERS } from './renders.js';

const read = (file: string): string => readFileSync(path.join(REPO_ROOT, file), 'utf8');
const IMAGE_COMPONENT = 'knative/components/image/kustomization.yaml';
const PLACEHOLDER = 'source-watcher-recovery';

/** Every YAML file under knative/, relative to the repository. */
function knativeFiles(dir = 'knative'): string[] {
  return readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) return knativeFiles(rel);
    return /\.ya?ml$/.test(e.name) ? [rel] : [];
  });
}

interface ImageEntry {
  name: string;
  newName?: string;
  newTag?: string;
  digest?: string;
}

function imageEntry(): ImageEntry {
  const doc = parseAllDocuments(read(IMAGE_COMPONENT))[0]?.toJS() as { images?: ImageEntry[] };
  expect(doc.images).toHaveLength(1);
  return doc.images?.[0] as ImageEntry;
}

describe('the image reference', () => {
  it('lives in one kustomize images: entry, for the placeholder every Service names', () => {
    const entry = imageEntry();
    expect(entry.name).toBe(PLACEHOLDER);
    expect(entry.newName).toMatch(/^[a-z0-9.-]+(\/[a-z0-9._-]+)+$/);
    expect(entry.newTag !== undefined || entry.digest !== undefined).toBe(true);
    const elsewhere = knativeFiles().filter(
      (f) => f !== IMAGE_COMPONENT && read(f).includes(entry.newName ?? '\0'),
    );
    expect(elsewhere).toEqual([]);
    const images = knativeFiles().flatMap((f) =>
      [...read(f).matchAll(/^\s*image:\s*(\S+)/gm)].map((m) => `${f}: ${m[1]}`),
    );
    expect(images.length).toBe(5);
    for (const i of images) expect(i).toMatch(new RegExp(`: ${PLACEHOLDER}$`));
  });

  it.each(RENDERS)(
    '%s: every Service runs the entry of the images: entry (the component is included last)',
    (dir) => {
      const entry = imageEntry();
      const want =
        entry.digest !== undefined
          ? `${entry.newName}@${entry.digest}`
          : `${entry.newName}:${entry.newTag}`;
      const services = renderKustomize(dir).filter((o) => o.kind === 'Service');
      expect(services.length).toBeGreaterThan(0);
      for (const s of services) {
        const containers = (s.spec as { template: { spec: { containers: { image: string }[] } } })
          .template.spec.containers;
        expect(
          containers.map((c) => c.image),
          s.metadata.name,
        ).toEqual([want]);
      }
    },
  );
});

describe('the build', () => {
  it('is one path: npm run image runs .ci/image/build.sh, and CI runs npm run image', () => {
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> })
      .scripts;
    expect(scripts['image']).toBe('node toolchain/with-node.cjs bash .ci/image/build.sh');
    expect(read('.ci/run')).toMatch(
      /^npm run image -- --load localhost\/source-watcher-recovery:ci$/m,
    );
    expect(scripts['build']).toContain('node toolchain/bundle.mjs');
  });

  it('runs no package manager install and no maintainer script in what it assembles', () => {
    const build = read('.ci/image/build.sh')
      .split('\n')
      .filter((l) => !/^\s*#/.test(l))
      .join('\n');
    expect(build).not.toMatch(/\bnpm (ci|install|i)\b/);
    expect(build).not.toMatch(/\bapt(-get)? install\b/);
    // Debian's packages are only unpacked; npm's Node package is only fetched (npm pack).
    expect(build).toMatch(/mmdebstrap --variant=extract\b/);
    expect(build).toMatch(/npm pack\b/);
  });

  it("carries toolchain/'s Node, checked against the sha512 of toolchain/package-lock.json", () => {
    const build = read('.ci/image/build.sh');
    expect(build).toContain(
      `require('./toolchain/package-lock.json').packages['node_modules/\${pkg}'].integrity`,
    );
    expect(build).toMatch(/if \[\[ "\$got" != "\$want" \]\]; then[\s\S]*?exit 1/);
    expect(build).toContain('for arch in amd64 arm64; do');
  });

  it('runs as 65532 by default, detect as the default command, from /app', () => {
    const oci = read('.ci/image/oci.mjs');
    expect(oci).toContain("User: '65532:65532'");
    expect(oci).toContain("WorkingDir: '/app'");
    const cmd = /Cmd: (\[[^\]]*\])/.exec(oci)?.[1] ?? '';
    const argv = JSON.parse(cmd.replace(/'/g, '"')) as string[];
    const detect = base().find((o) => o.kind === 'Service' && o.metadata.name === 'detect');
    const command = (
      detect?.spec as { template: { spec: { containers: { command: string[] }[] } } }
    ).template.spec.containers[0]?.command;
    expect(argv).toEqual(command);
  });
});
