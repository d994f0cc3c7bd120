// The verbatim upstream CRDs the repository carries (test/third_party/crds/): every file of
// SHA256SUMS is read and checked, the Webhook conversion is turned off for the test cluster, and a
// changed, missing or unlisted file fails with its name instead of installing other schemas.

import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CARRIED_CRD_DIR, readSums } from '../../support/carried-files.js';
import { loadCarriedCrds } from '../../setup/install-crds.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function copyOf(file: string, edit: (text: string) => string = (t) => t): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'swr-crds-'));
  dirs.push(dir);
  const original = await readFile(join(CARRIED_CRD_DIR, file), 'utf8');
  await mkdir(join(dir, 'sub'));
  await writeFile(join(dir, 'sub', 'crd.yaml'), edit(original));
  const sum = createHash('sha256').update(original).digest('hex');
  await writeFile(join(dir, 'SHA256SUMS'), `${sum}  sub/crd.yaml\n`);
  return dir;
}

describe('loadCarriedCrds', () => {
  it('loads the seven upstream CRDs the tests serve, none with a webhook conversion', () => {
    const crds = loadCarriedCrds();
    expect(crds.map((c) => c.metadata?.name).sort()).toEqual([
      'apiserversources.sources.knative.dev',
      'brokers.eventing.knative.dev',
      'eventpolicies.eventing.knative.dev',
      'packagesources.cozystack.io',
      'pingsources.sources.knative.dev',
      'sinkbindings.sources.knative.dev',
      'triggers.eventing.knative.dev',
    ]);
    for (const crd of crds) expect(crd.spec.conversion?.strategy ?? 'None').toBe('None');
    // PingSource is the one served at two versions (v1 stored, v1beta2).
    const ping = crds.find((c) => c.metadata?.name === 'pingsources.sources.knative.dev');
    expect(ping?.spec.versions.map((v) => v.name).sort()).toEqual(['v1', 'v1beta2']);
  });

  it('keeps the upstream schema as written (no field dropped)', () => {
    const crds = loadCarriedCrds();
    const ps = crds.find((c) => c.metadata?.name === 'packagesources.cozystack.io');
    const schema = ps?.spec.versions[0]?.schema?.openAPIV3Schema;
    expect(Object.keys(schema?.properties ?? {}).sort()).toEqual(
      expect.arrayContaining(['apiVersion', 'kind', 'metadata', 'spec', 'status']),
    );
    expect(ps?.spec.scope).toBe('Cluster');
  });

  it.each([
    [
      'a changed file',
      (t: string) => t.replace('PackageSource', 'PackageSourcf'),
      /sha256 .* says/,
    ],
  ])('refuses %s, naming it', async (_label, edit, message) => {
    const dir = await copyOf('cozystack/cozystack.io_packagesources.yaml', edit);
    expect(() => loadCarriedCrds(dir)).toThrow(message);
    expect(() => loadCarriedCrds(dir)).toThrow(join(dir, 'sub', 'crd.yaml'));
  });

  it('accepts an unchanged copy', async () => {
    const dir = await copyOf('cozystack/cozystack.io_packagesources.yaml');
    expect(loadCarriedCrds(dir).map((c) => c.metadata?.name)).toEqual([
      'packagesources.cozystack.io',
    ]);
  });

  it('fails with a clear message when the directory is missing', () => {
    expect(() => loadCarriedCrds(join(tmpdir(), 'no-such-carried-crds'))).toThrow(
      /carried test data missing: .*no-such-carried-crds/,
    );
  });

  it('fails when SHA256SUMS lists a file that is not there', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'swr-crds-'));
    dirs.push(dir);
    await writeFile(join(dir, 'SHA256SUMS'), `${'0'.repeat(64)}  gone.yaml\n`);
    expect(() => loadCarriedCrds(dir)).toThrow(/gone\.yaml/);
  });

  it('fails on a file in the folder that SHA256SUMS does not list', async () => {
    const dir = await copyOf('cozystack/cozystack.io_packagesources.yaml');
    await writeFile(join(dir, 'sub', 'extra.yaml'), 'kind: CustomResourceDefinition\n');
    expect(() => loadCarriedCrds(dir)).toThrow(/does not list sub\/extra\.yaml/);
  });

  it('names each carried folder in the provenance README, with its license beside it', async () => {
    const readme = await readFile(join(CARRIED_CRD_DIR, '..', 'README.md'), 'utf8');
    const license = await readFile(join(CARRIED_CRD_DIR, '..', 'LICENSE'), 'utf8');
    expect(license).toMatch(/Apache License\s+Version 2\.0/);
    const folders = new Set(readSums(CARRIED_CRD_DIR).map((l) => l.name.split('/')[0]));
    expect(folders.size).toBe(3);
    for (const folder of folders) expect(readme).toContain(`\`${folder}/\``);
  });
});
