// The functions read from the API server's watch cache (resourceVersion=0), which can lag a write
// by a few milliseconds. Setups wait until the cache shows what they just wrote, so that a
// fault-free run and a faulted run see the same objects.

import { createKubeClient } from '../../../shared/kube/client.js';
import { isKubeError } from '../../../shared/kube/errors.js';
import type { KubePort } from '../../../shared/kube/port.js';
import type { AgRef } from '../../../shared/core/types.js';
import { testKubeConfig } from '../../support/apiserver.js';

let direct: KubePort | undefined;

/** A product adapter straight to the API server (no proxy), for setups. */
export function directKube(): KubePort {
  direct ??= createKubeClient({
    kubeConfig: testKubeConfig(),
    fieldManager: 'reliability-setup',
    requestTimeoutMs: 10_000,
  });
  return direct;
}

async function until(what: string, ok: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await ok()) return;
    if (Date.now() > deadline) throw new Error(`watch cache never showed ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function waitForCachedAg(
  ref: AgRef,
  resourceVersion: string | undefined,
): Promise<void> {
  await until(`artifactgenerator ${ref.namespace}/${ref.name}@${resourceVersion}`, async () => {
    try {
      const ag = await directKube().getArtifactGenerator(ref, { cached: true });
      return ag.metadata?.resourceVersion === resourceVersion;
    } catch (e) {
      if (isKubeError(e, 'NotFound')) return false;
      throw e;
    }
  });
}

export async function waitForCachedPs(
  name: string,
  resourceVersion: string | undefined,
): Promise<void> {
  await until(`packagesource ${name}@${resourceVersion}`, async () => {
    try {
      const ps = await directKube().getPackageSource(name, { cached: true });
      return ps.metadata?.resourceVersion === resourceVersion;
    } catch (e) {
      if (isKubeError(e, 'NotFound')) return false;
      throw e;
    }
  });
}
