// The image runs what the tests run (issue 12, item 8): one Node major in package.json's engines,
// in every stage of the Dockerfile, in the check .ci/run makes before it tests, and in the Node
// these tests run on (CI runs them, so this is the major CI tests on).

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

/** The Node major of every FROM in the Dockerfile (ARG defaults substituted). */
function dockerfileMajors(): string[] {
  const text = read('Dockerfile');
  const args = new Map<string, string>();
  for (const m of text.matchAll(/^ARG\s+(\w+)=(\S+)/gm)) args.set(m[1] as string, m[2] as string);
  const images = [...text.matchAll(/^FROM\s+(?:--platform=\S+\s+)?(\S+)/gm)].map((m) =>
    (m[1] as string).replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a, b) => args.get(a ?? b) ?? ''),
  );
  return images.map((image) => {
    const m = /^node:(\d+)(?:[.-]|$)/.exec(image);
    if (m === null) throw new Error(`not a versioned node image: ${image}`);
    return m[1] as string;
  });
}

describe('one Node major for the tests, CI and the image', () => {
  it('engines.node names one major', () => {
    expect(enginesMajor()).toMatch(/^\d+$/);
  });

  it('every Dockerfile stage uses the engines major', () => {
    const majors = dockerfileMajors();
    expect(majors.length).toBeGreaterThanOrEqual(2);
    expect(new Set(majors)).toEqual(new Set([enginesMajor()]));
  });

  it('the tests run on the engines major (CI runs them)', () => {
    expect(process.versions.node.split('.')[0]).toBe(enginesMajor());
  });

  it('.ci/run refuses another major before it tests', () => {
    const run = read('.ci/run');
    const check = run.indexOf('engines_major=');
    expect(check).toBeGreaterThan(-1);
    expect(run).toMatch(/if \[\[ "\$node_major" != "\$engines_major" \]\]; then[\s\S]*?exit 1/);
    expect(check).toBeLessThan(run.search(/^npm test/m));
    expect(check).toBeLessThan(run.search(/^npm ci/m));
  });

  it('@types/node matches the major the code runs on', () => {
    const pkg = JSON.parse(read('package.json')) as { devDependencies: Record<string, string> };
    expect(pkg.devDependencies['@types/node']?.split('.')[0]).toBe(enginesMajor());
  });
});
