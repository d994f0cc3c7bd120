// Refusals counted by the runtime's wrappers (docs/adr/0059): a write that a
// ValidatingAdmissionPolicy denied (policy-denied, ADR 55), a delivery the sender check refused
// (unauthenticated, ADR 56). A forged owner is counted where it is reported (shared/recovery/owner-refusal.ts).

import { describe, expect, it } from 'vitest';
import {
  ForbiddenError,
  InvalidError,
  TransientError,
  type KubeError,
} from '../../../shared/kube/errors.js';
import {
  isPolicyDenial,
  noopMetrics,
  type Metrics,
  type RefusalReason,
} from '../../../shared/runtime/metrics.js';
import { countingApiErrors, countingRefusals } from '../../../shared/runtime/metrics-start.js';
import type { SenderAuth, SenderCheckResult } from '../../../shared/runtime/sender-auth.js';

const DENIED =
  'patch artifactgenerators n/a failed: HTTP 403 Forbidden: artifactgenerators.source.extensions.fluxcd.io "a" is forbidden: ' +
  "ValidatingAdmissionPolicy 'source-watcher-recovery-force-drift' with binding 'source-watcher-recovery-force-drift' denied request: force-drift may not change an ArtifactGenerator's spec";
const RBAC =
  'patch artifactgenerators n/a failed: HTTP 403 Forbidden: User "system:serviceaccount:x:force-drift" cannot patch resource "artifactgenerators"';

function recording(): { metrics: Metrics; refused: RefusalReason[] } {
  const refused: RefusalReason[] = [];
  return { refused, metrics: { ...noopMetrics, refused: (r) => void refused.push(r) } };
}

describe('metrics: policy denials', () => {
  it.each<[string, string, string, boolean]>([
    ['a policy denial, Forbidden', 'Forbidden', DENIED, true],
    [
      'a policy denial with reason Invalid',
      'Invalid',
      DENIED.replace('403 Forbidden', '422 Invalid'),
      true,
    ],
    ['an RBAC Forbidden', 'Forbidden', RBAC, false],
    ['a schema Invalid', 'Invalid', 'HTTP 422 Invalid: spec.x: Required value', false],
    ['a Transient naming a policy', 'Transient', DENIED, false],
    [
      'the policy named without a denial',
      'Forbidden',
      "ValidatingAdmissionPolicy 'p' could not be evaluated",
      false,
    ],
  ])('%s -> %s', (_label, kind, message, denied) => {
    expect(isPolicyDenial(kind, message)).toBe(denied);
  });

  it('a write refused by a policy counts policy-denied; a read, an RBAC refusal and a 5xx do not', async () => {
    const { metrics, refused } = recording();
    const fail = (e: KubeError) => () => Promise.reject(e);
    const port = countingApiErrors(
      {
        patchArtifactGeneratorAnnotations: fail(new ForbiddenError(DENIED)),
        patchPackageSourceConditions: fail(new InvalidError(DENIED)),
        createEvent: fail(new ForbiddenError(RBAC)),
        getArtifactGenerator: fail(new ForbiddenError(DENIED)),
        deleteExternalArtifact: fail(new TransientError('HTTP 503')),
      },
      metrics,
    );
    for (const call of Object.values(port)) await expect(call()).rejects.toBeInstanceOf(Error);
    expect(refused).toEqual(['policy-denied', 'policy-denied']);
  });
});

describe('metrics: unauthenticated deliveries', () => {
  const auth = (result: SenderCheckResult): SenderAuth => ({
    reviews: 7,
    check: () => Promise.resolve(result),
  });
  it.each<[string, SenderCheckResult, number]>([
    ['no token (401)', { ok: false, status: 401, reason: 'missing token' }, 1],
    ['a sender not allowed (403)', { ok: false, status: 403, reason: 'sender not allowed' }, 1],
    [
      'a review that failed (503): redelivered, not refused',
      { ok: false, status: 503, reason: 'token review failed' },
      0,
    ],
    ['a pass', { ok: true, username: 'system:serviceaccount:e:t', reviewed: true }, 0],
  ])('%s -> %d refusal(s)', async (_label, result, count) => {
    const { metrics, refused } = recording();
    const counted = countingRefusals(auth(result), metrics);
    expect(await counted.check({})).toEqual(result);
    expect(counted.reviews).toBe(7);
    expect(refused).toEqual(Array(count).fill('unauthenticated'));
  });

  it('no export: the sender check is returned as it is', () => {
    const a = auth({ ok: true, username: 'u', reviewed: false });
    expect(countingRefusals(a, noopMetrics)).toBe(a);
  });
});
