// End-to-end, the finding of issue 32 ("the owner must be the owner", docs/adr/0053): a tenant's
// AGs, created by the tenant identity in its own namespaces, name the platform PackageSource as
// their controller (one with a made-up uid, one with the real uid copied), and the simulator loses
// their Ready writes every time. The whole system (detect, force-drift, surface-stalled over the
// Knative emulation) forces them five times and gives up on them as plain Flux AGs; the platform
// PackageSource, whose own AG is healthy, is never written.

import { describe, expect, it } from 'vitest';
import {
  ANNOTATION_ATTEMPTS,
  type AgRef,
  type ArtifactGenerator,
} from '../../shared/core/index.js';
import {
  createArtifactGenerator,
  ensureNamespace,
  getPackageSource,
  makeArtifactGenerator,
} from '../support/apiserver.js';
import { listEventsAbout } from '../support/kube-events.js';
import { tenantKubeConfig } from '../support/tenant-identity.js';
import {
  MINUTE,
  createPair,
  kc,
  readAg,
  readPackageSource,
  readyCondition,
  report,
  seconds,
  startSystem,
} from './scenario-kit.js';

describe('e2e: a forged PackageSource owner', () => {
  it('tenant AGs naming the platform PackageSource, never healing: forced and given up on as plain Flux AGs; the platform PackageSource untouched', async () => {
    const system = await startSystem();
    const platform = await createPair(system);
    await system.runUntil(
      () =>
        system.progress
          .packageSourceVersions(platform.name)
          .some((v) => v.status === 'True' && v.reason === 'Succeeded'),
      { maxVirtualMs: MINUTE, what: 'the platform PackageSource Ready=True' },
    );
    const before = await readPackageSource(platform.name);
    const seenBefore = system.progress.packageSourceVersions(platform.name).length;
    const uid = (await getPackageSource(platform.name, kc)).metadata?.uid ?? '';
    expect(uid).not.toBe('');

    // A made-up uid under the served version is deleted by the test cluster's garbage collector
    // (no PackageSource has it) within about 30 s; a tenant who wants it to last names a version
    // the collector cannot resolve (docs/adr/0053). The real uid copied is never collected.
    const forgeries = [
      {
        namespace: 'tenant-a',
        uid: '00000000-0000-4000-8000-00000000000a',
        apiVersion: 'cozystack.io/v1alpha999',
      },
      { namespace: 'tenant-b', uid, apiVersion: undefined },
    ];
    const tenantAgs: { key: string; ref: AgRef; ag: ArtifactGenerator }[] = [];
    for (const f of forgeries) {
      await ensureNamespace(f.namespace);
      const tenant = await tenantKubeConfig(f.namespace);
      const key = `${f.namespace}/${platform.name}`;
      system.sim.loseConditionsWrite(key, {});
      const manifest = makeArtifactGenerator({
        name: platform.name,
        namespace: f.namespace,
        owner: { name: platform.name, uid: f.uid },
      });
      const ref = manifest.metadata?.ownerReferences?.[0];
      if (ref !== undefined && f.apiVersion !== undefined) ref.apiVersion = f.apiVersion;
      const ag = await createArtifactGenerator(manifest, tenant);
      tenantAgs.push({ key, ref: { namespace: f.namespace, name: platform.name }, ag });
    }

    const fiveForces = () =>
      tenantAgs.every(({ key }) => system.progress.of(key).forces.length >= 5);
    const startedAt = system.clock.now();
    await system
      .runUntil(fiveForces, { maxVirtualMs: 14 * MINUTE, what: 'five forces each' })
      .catch((e: unknown) => {
        const seen = tenantAgs.map(({ key }) => {
          const p = system.progress.of(key);
          return `${key}: ${p.stalls.length} lost writes, forces ${p.forces.map((f) => f.attempt).join(',')}`;
        });
        throw new Error(`${e instanceof Error ? e.message : String(e)}; ${seen.join('; ')}`);
      });
    const fiveForcesAt = system.clock.now();
    // The last window (4 m) closes and the verdict is written; one more resync and alarm round.
    await system.advance(6 * MINUTE);

    const after = await readPackageSource(platform.name);
    expect(after?.metadata.resourceVersion).toBe(before?.metadata.resourceVersion);
    expect(after?.status?.conditions).toEqual(before?.status?.conditions);
    expect(readyCondition(after)).toMatchObject({ status: 'True', reason: 'Succeeded' });
    // The harness's watch saw no version of it after the tenant AGs came.
    expect(system.progress.packageSourceVersions(platform.name).slice(seenBefore)).toEqual([]);

    for (const t of tenantAgs) {
      const p = system.progress.of(t.key);
      expect(p.forces.map((f) => f.attempt)).toEqual([1, 2, 3, 4, 5]);
      const ag = await readAg(t.ref);
      expect(ag?.metadata.annotations?.[ANNOTATION_ATTEMPTS]).toBe('5');
      const events = await listEventsAbout(kc, t.ref.namespace, {
        uid: t.ag.metadata?.uid ?? '',
        name: t.ref.name,
      });
      const reasonsOf = new Set(events.map((e) => `${e.type} ${e.reason}`));
      expect(reasonsOf).toContain('Warning PackageSourceOwnerRefused');
      // The verdict is the AG's own Event (no PackageSource shows it).
      expect(reasonsOf).toContain('Warning SourceWatcherStalled');
      const refusal = events.find((e) => e.reason === 'PackageSourceOwnerRefused');
      expect(refusal?.note).toContain(`PackageSource ${platform.name}`);
      expect(refusal?.note).toContain(`in namespace "${t.ref.namespace}"`);
    }
    // The platform's own AG was never forced.
    expect(system.progress.of(platform.key).forces).toEqual([]);

    report('trust: forged PackageSource owner', {
      tenantAgs: tenantAgs.length,
      fiveForcesAfter: seconds(fiveForcesAt - startedAt),
      platformPackageSourceWrites: 0,
    });
  });
});
