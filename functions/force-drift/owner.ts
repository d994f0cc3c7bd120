// Is the AG's controlling PackageSource being deleted (held by a finalizer)? Then its AG is not
// forced (docs/adr/0020). One cached read, only for an AG that a PackageSource can own, started
// at most once per AG read: early, beside the signal's history read, when that read is made, so
// the two calls overlap (docs/adr/0044).
//
// The owner is verified first (docs/adr/0053): the ownerReference is tenant input, so a
// PackageSource counts only when the AG sits where Cozystack puts that PackageSource's AG and the
// reference's uid is the uid of the PackageSource read. A refused owner's deletion state neither
// holds back nor steers the force: the AG is forced as a plain Flux AG, and the refusal is said
// (a warn line and a PackageSourceOwnerRefused Event on the AG) when the check is used.
//
// A PackageSource that is gone does not stop the force (an orphan AG that the garbage collector
// removes; forcing it is harmless). Nor does one that cannot be read for transient reasons: under
// the storm that causes fluxcd/pkg#934 the read fails as often as any other, and holding the force
// back for it would delay every recovery by a redelivery to spare, at worst, one rebuild of an AG
// that is about to be deleted (docs/adr/0044); it is logged at warn once per process, at debug
// after that. Any other error (403: the install lacks the grant) stops the force.

import {
  isPackageSourceDeleting,
  precheckOwner,
  verifyOwner,
  type OwnerRefusal,
} from '../../shared/core/index.js';
import type { ArtifactGenerator } from '../../shared/core/objects/types.js';
import { isKubeError } from '../../shared/kube/errors.js';
import type { RecordEvent } from '../../shared/recovery/kube-event-recorder.js';
import type { Logger } from '../../shared/runtime/logger.js';
import { reportRefusedOwner } from '../../shared/recovery/owner-refusal.js';
import type { ForceDriftDeps } from './deps.js';

export interface OwnerCheck {
  /** Starts the read now (no-op when there is no owner to read or it has started). */
  start(): void;
  /** True when the (verified) owner is being deleted; throws what stops the force. */
  deleting(): Promise<boolean>;
}

type Answer =
  { ok: true; deleting: boolean; refused?: OwnerRefusal } | { ok: false; error: unknown };

export function ownerCheck(
  ag: ArtifactGenerator,
  deps: ForceDriftDeps,
  log: Logger,
  record: RecordEvent,
): OwnerCheck {
  const rule = deps.config.packageSourceOwners;
  const pre = precheckOwner(ag, rule);
  let answer: Promise<Answer> | undefined;
  let reported = false;
  const run = (): Promise<Answer> => {
    if (pre.kind === 'none') return Promise.resolve({ ok: true, deleting: false });
    if (pre.kind === 'refused') return Promise.resolve({ ok: true, deleting: false, refused: pre });
    const owner = pre.claim.name;
    answer ??= deps.kube.getPackageSource(owner, { cached: true }).then(
      (ps): Answer => {
        const verdict = verifyOwner(ag, ps, rule);
        if (verdict.kind === 'refused') return { ok: true, deleting: false, refused: verdict };
        return { ok: true, deleting: isPackageSourceDeleting(ps) };
      },
      (e: unknown): Answer => {
        if (isKubeError(e, 'NotFound')) return { ok: true, deleting: false };
        if (isKubeError(e, 'Transient')) {
          deps.warnOnce(
            'owner-unreadable',
            log,
            { packageSource: owner, err: e.message },
            'owner PackageSource unreadable; forcing without its deletion check',
          );
          return { ok: true, deleting: false };
        }
        return { ok: false, error: e };
      },
    );
    return answer;
  };
  return {
    start: () => void run(),
    deleting: async () => {
      const a = await run();
      if (!a.ok) throw a.error;
      if (a.refused !== undefined && !reported) {
        reported = true;
        await reportRefusedOwner(ag, a.refused, log, record, deps.metrics);
      }
      return a.deleting;
    },
  };
}
