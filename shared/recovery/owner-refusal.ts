// A refused PackageSource owner (docs/adr/0053): one warn line that names the reference and why,
// the refusal counted (forged-owner), and the PackageSourceOwnerRefused Event on the AG (in its namespace, where its tenant sees it).
// The Event is best effort and bounded like every Event of ours (a series of at most 20 per
// refusal: same AG, same reference, same reason).

import { ownerRefusedStep, type ArtifactGenerator, type OwnerRefusal } from '../core/index.js';
import type { RecordEvent } from './kube-event-recorder.js';
import type { Logger } from '../runtime/logger.js';
import type { Metrics } from '../runtime/metrics.js';

export async function reportRefusedOwner(
  ag: ArtifactGenerator,
  refusal: OwnerRefusal,
  log: Logger,
  record: RecordEvent,
  metrics?: Metrics,
): Promise<void> {
  metrics?.refused('forged-owner');
  log.warn(
    {
      packageSource: refusal.claim.name,
      ownerUid: refusal.claim.uid.slice(0, 64),
      why: refusal.why,
      detail: refusal.detail,
    },
    'PackageSource owner reference refused; a plain Flux AG',
  );
  await record(ag, ownerRefusedStep(refusal));
}
