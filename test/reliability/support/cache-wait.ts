// The functions read from the API server's watch cache (resourceVersion=0), which can lag a write
// by a few milliseconds. Setups wait until the cache shows what they just wrote, so that a
// fault-free run and a faulted run see the same objects.

import { createKubeClient } from '../../../shared/kube/client.js';
import { isKubeError } from '../../../shared/kube/errors.js';
import type { KubePort } from '../../../shared/kube/port.js';
import type { AgRef } from '../../../shared/core/objects/types.js';
import { testKubeConfig } from '../../support/apiserver.js';
import { systemClock } from '../../../shared/runtime/clock.js';

type CachedRead = (kube: KubePort) => Promise<{ metadata?: { resourceVersion?: string } }>;

/** Polls `read` (a product adapter straight to the API server, no proxy) until it shows `rv`. */
async function untilCached(
  what: string,
  resourceVersion: string | undefined,
  read: CachedRead,
  timeoutMs = 10_000,
): Promise<void> {
  const kube = createKubeClient({
    clock: systemClock,
    kubeConfig: testKubeConfig(),
    fieldManager: 'reliability-setup',
    requestTimeoutMs: 10_000,
  });
  const shows = async (): Promise<boolean> => {
    try {
      return (await read(kube)).metadata?.resourceVersion === resourceVersion;
    } catch (e) {
      if (isKubeError(e, 'NotFound')) return false;
      throw e;
    }
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await shows()) return;
    if (Date.now() > deadline)
      throw new Error(`watch cache never showed ${what}@${resourceVersion}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const waitForCachedAg = (ref: AgRef, resourceVersion: string | undefined): Promise<void> =>
  untilCached(`artifactgenerator ${ref.namespace}/${ref.name}`, resourceVersion, (kube) =>
    kube.getArtifactGenerator(ref, { cached: true }),
  );

export const waitForCachedPs = (name: string, resourceVersion: string | undefined): Promise<void> =>
  untilCached(`packagesource ${name}`, resourceVersion, (kube) =>
    kube.getPackageSource(name, { cached: true }),
  );
