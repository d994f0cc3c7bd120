// The AG's version before a given resourceVersion, remembered by the process (docs/adr/0045).
// An etcd revision never changes: the AG as it was just before revision N is the same answer for
// as long as the process lives, on every replica. So an answer read once is kept (a bounded, least
// recently used set) and a redelivered event, a later sweep or a second function path asks the
// API server nothing. Concurrent asks for the same revision share one read. Only definite answers
// (found, absent) are kept; a failed read is forgotten at once, so the next delivery reads again.
// The memory is an optimisation, never state: a replica that starts empty reads what it needs.

import type { AgRef, ArtifactGenerator } from '../core/objects/types.js';
import type { KubePort, PreviousVersion } from '../kube/port.js';
import { setNewest } from './newest-first.js';

/** Answers kept per process: a few hundred AGs' stalls; each is the AG without its managedFields. */
export const PREVIOUS_VERSIONS_KEPT = 512;

export interface PreviousVersions {
  /** The AG before `resourceVersion`: the kept answer, the read in flight, or one new read. */
  before(ref: AgRef, resourceVersion: string): Promise<PreviousVersion>;
  /** Whether an answer for this revision is kept (asking for it costs no request). */
  known(ref: AgRef, resourceVersion: string): boolean;
}

export function createPreviousVersions(
  kube: Pick<KubePort, 'getArtifactGeneratorBefore'>,
  kept: number = PREVIOUS_VERSIONS_KEPT,
): PreviousVersions {
  const answers = new Map<string, PreviousVersion>();
  const inFlight = new Map<string, Promise<PreviousVersion>>();
  const keyOf = (ref: AgRef, rv: string): string => `${ref.namespace}/${ref.name}@${rv}`;

  const keep = (key: string, answer: PreviousVersion): void =>
    setNewest(answers, key, answer, kept);

  return {
    before(ref, resourceVersion) {
      const key = keyOf(ref, resourceVersion);
      const answer = answers.get(key);
      if (answer !== undefined) {
        keep(key, answer);
        return Promise.resolve(answer);
      }
      const pending = inFlight.get(key);
      if (pending !== undefined) return pending;
      const read = kube.getArtifactGeneratorBefore(ref, resourceVersion);
      inFlight.set(key, read);
      // The handler marks `read` as handled: a caller that never awaits it (a speculative read
      // whose answer was not needed) leaves no unhandled rejection behind.
      read.then(
        (got) => {
          inFlight.delete(key);
          if (got.kind === 'found') keep(key, { kind: 'found', ag: trimmed(got.ag) });
          else if (got.kind === 'absent') keep(key, got);
        },
        () => inFlight.delete(key),
      );
      return read;
    },
    known(ref, resourceVersion) {
      return answers.has(keyOf(ref, resourceVersion));
    },
  };
}

/** The previous version without managedFields, the one part of it that is large and never read. */
function trimmed(ag: ArtifactGenerator): ArtifactGenerator {
  const meta = ag.metadata as
    (ArtifactGenerator['metadata'] & { managedFields?: unknown }) | undefined;
  if (meta?.managedFields === undefined) return ag;
  const { managedFields: _dropped, ...metadata } = meta;
  return { ...ag, metadata };
}
