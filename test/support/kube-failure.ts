// The typed error a kube adapter call fails with, for tests that assert on a failure.

import { isKubeError, type KubeError } from '../../shared/kube/errors.js';

/** Awaits `p` and returns the KubeError it rejects with; anything else fails the test. */
export async function failureOf(p: Promise<unknown>): Promise<KubeError> {
  try {
    await p;
  } catch (err) {
    if (isKubeError(err)) return err;
    throw new Error(`expected a KubeError, got ${String(err)}`, { cause: err });
  }
  throw new Error('expected the call to fail');
}
