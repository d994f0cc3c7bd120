// The verbatim upstream CRDs of ../shared/crds/: every file of SHA256SUMS is read and checked, the
// Webhook conversion is turned off for the test cluster, and a changed or missing file fails with
// its name instead of installing other schemas.

import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSharedCrds, SHARED_CRD_DIR } from '../../setup/install-crds.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function copyOf(file: string, edit: (text: string) => string = (t) => t): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'swr-crds-'));
  dirs.push(dir);
  const original = await readFile(join(SHARED_CRD_DIR, file), 'utf8');
  await mkdir(join(dir, 'sub'));
  await writeFile(join(dir, 'sub', 'crd.yaml'), edit(original));
  const sum = createHash('sha256').update(original).digest('hex');
  await writeFile(join(dir, 'SHA256SUMS'), `${sum}  sub/crd.yaml\n`);
  return dir;
}

describe('loadSharedCrds', () => {
  it('loads the six upstream CRDs the tests serve, none with a webhook conversion', async () => {
    const crds = await loadSharedCrds();
    expect(crds.map((c) => c.metadata?.name).sort()).toEqual([
      'apiserversources.sources.knative.dev',
      'brokers.eventing.knative.dev',
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

  it('keeps the upstream schema as written (no field dropped)', async () => {
    const crds = await loadSharedCrds();
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
    await expect(loadSharedCrds(dir)).rejects.toThrow(message);
    await expect(loadSharedCrds(dir)).rejects.toThrow(join(dir, 'sub', 'crd.yaml'));
  });

  it('accepts an unchanged copy', async () => {
    const dir = await copyOf('cozystack/cozystack.io_packagesources.yaml');
    expect((await loadSharedCrds(dir)).map((c) => c.metadata?.name)).toEqual([
      'packagesources.cozystack.io',
    ]);
  });

  it('fails with a clear message when the directory is missing', async () => {
    await expect(loadSharedCrds(join(tmpdir(), 'no-such-shared-crds'))).rejects.toThrow(
      /upstream CRDs are missing/,
    );
  });

  it('fails when SHA256SUMS lists a file that is not there', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'swr-crds-'));
    dirs.push(dir);
    await writeFile(join(dir, 'SHA256SUMS'), `${'0'.repeat(64)}  gone.yaml\n`);
    await expect(loadSharedCrds(dir)).rejects.toThrow(/gone\.yaml/);
  });
});
