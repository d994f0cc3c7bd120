// Read, decide, write for one AG. Round 0 reads from the API server's cache, with the event's
// object laid over the list (the no-op path: a cached get and one cached list per namespace, no
// write); a heal is confirmed on fresh reads alone (the event's object is not used again: a
// forged one cannot make a heal) before anything is written, and after a failed precondition
// every read is fresh. Writes: delete a drifted ExternalArtifact whose digest another field
// manager owns (uid and resourceVersion preconditions) when source-watcher can re-create it, then
// bump requestedAt with the AG's resourceVersion as precondition, so replicas and redeliveries
// bump at most once per drift (docs/adr/0038, docs/adr/0054).

import {
  ANNOTATION_REQUESTED_AT,
  decideHeal,
  externalArtifactNamespaces,
  generatorSelector,
  notSettled,
  recreateIdentityFor,
  requestedAtFor,
  withObserved,
  type AgRef,
  type ArtifactGenerator,
  type ExternalArtifact,
  type HealDecision,
} from '../../shared/core/index.js';
import { isKubeError } from '../../shared/kube/errors.js';
import { AGAIN, REDECIDE_ROUNDS, redecide } from '../../shared/kube/redecide.js';
import { createEventRecorder } from '../../shared/recovery/kube-event-recorder.js';
import type { Logger } from '../../shared/runtime/logger.js';
import type { HealDeps } from './deps.js';

export type HealResult =
  | 'healed'
  | 'observed'
  | 'gone'
  | 'other-generator'
  | 'cannot-recreate'
  | Extract<HealDecision, { kind: 'leave' }>['why']
  | 'conflict';

const PAGE_SIZE = 500;

/** What an ExternalArtifact event names: its generator, and the object as the event carried it. */
export interface HealTarget {
  readonly ref: AgRef;
  /** The generator's uid on the ExternalArtifact: an AG re-created under the same name is another. */
  readonly uid: string;
  readonly observed: ExternalArtifact;
  /** The event was the ExternalArtifact's deletion. */
  readonly observedDeleted: boolean;
}

/** Re-reads the generator and its ExternalArtifacts, decides (decideHeal) and heals. */
export async function healGenerator(
  target: HealTarget,
  deps: HealDeps,
  log: Logger,
): Promise<HealResult> {
  const { ref, uid, observed, observedDeleted } = target;
  const record = createEventRecorder(deps, log);
  return redecide<HealResult>(
    async (round) => {
      const cached = round === 0;
      let ag: ArtifactGenerator;
      try {
        ag = await deps.kube.getArtifactGenerator(ref, { cached });
      } catch (e) {
        if (isKubeError(e, 'NotFound')) return 'gone';
        throw e;
      }
      // An ExternalArtifact left by an earlier AG of the same name is not this AG's.
      if (ag.metadata?.uid !== uid) return 'other-generator';
      // Not open to a heal whatever its ExternalArtifacts say: one read, nothing listed.
      const blocked = notSettled(ag, { allowFailed: true });
      if (blocked !== null && blocked !== 'request-pending') return blocked;

      const namespaces = externalArtifactNamespaces(ag);
      const listed = await listAll(uid, namespaces, cached, deps);
      // The event's object only on the cached round, where it stands in for a lagging cache.
      const overlay = cached && namespaces.includes(observed.metadata?.namespace ?? '');
      const decision = decideHeal(
        ag,
        overlay ? withObserved(listed, observed, observedDeleted) : listed,
      );
      // Decided on the cache: a heal, or an object that does not look source-watcher's (an event
      // copy may lack managedFields), is confirmed on fresh reads before anything is written.
      if (cached && (decision.kind === 'heal' || decision.why === 'not-ours')) return AGAIN;
      if (decision.kind === 'leave') {
        log.debug({ why: decision.why, round }, 'left alone');
        return decision.why;
      }
      const drift = decision.drift.map((d) => `${d.kind} ${d.namespace}/${d.name}`);
      const left = await unrecreatable(ag, decision, deps);
      if (left.length > 0) {
        log.warn({ drift, left }, 'ExternalArtifact drift left: source-watcher cannot re-create');
        await record(ag, {
          kind: 'heal-left',
          drift,
          left,
          stamp: decision.recreate.map((t) => `${t.uid}@${t.resourceVersion}`).join(','),
        });
        return 'cannot-recreate';
      }
      const recreated = decision.recreate.map(
        (t) => `${t.namespace}/${t.name} (status.artifact.digest owned by ${t.owner})`,
      );
      const fields = { drift, recreate: recreated, bump: decision.bump };
      const now = deps.clock.now();
      if (deps.config.recovery.mode === 'observe') {
        log.info({ ...fields, observe: true }, 'would heal ExternalArtifact drift');
        await record(ag, {
          kind: 'would-heal',
          drift,
          recreated,
          bumped: decision.bump,
          stamp: `${ag.metadata?.resourceVersion ?? ''}:${drift.join(',')}`,
        });
        return 'observed';
      }
      if (!(await recreate(decision, deps, log))) return AGAIN;
      let requestedAt: string | undefined;
      if (decision.bump) {
        requestedAt = requestedAtFor(now);
        try {
          await deps.kube.patchArtifactGeneratorAnnotations(
            ref,
            { [ANNOTATION_REQUESTED_AT]: requestedAt },
            { resourceVersion: rvOf(ag) },
          );
        } catch (e) {
          if (!isKubeError(e, 'Conflict')) throw e;
          log.debug({ round }, 'precondition failed; re-reading');
          return AGAIN;
        }
      }
      log.info({ ...fields, requestedAt }, 'healed ExternalArtifact drift');
      deps.metrics?.externalArtifactHealed(ref);
      await record(ag, {
        kind: 'healed',
        drift,
        recreated,
        bumped: decision.bump,
        stamp:
          requestedAt ?? decision.recreate.map((t) => `${t.uid}@${t.resourceVersion}`).join(','),
      });
      return 'healed';
    },
    {
      exhausted: () => {
        log.warn({ rounds: REDECIDE_ROUNDS }, 'gave up re-deciding after conflicts');
        return 'conflict';
      },
    },
  );
}

/** Deletes every recreate target; false when one changed since it was judged (re-decide). */
async function recreate(
  decision: Extract<HealDecision, { kind: 'heal' }>,
  deps: HealDeps,
  log: Logger,
): Promise<boolean> {
  for (const t of decision.recreate) {
    try {
      await deps.externalArtifacts.deleteExternalArtifact(
        { namespace: t.namespace, name: t.name },
        { uid: t.uid, resourceVersion: t.resourceVersion },
      );
      log.info(
        { externalArtifact: `${t.namespace}/${t.name}`, owner: t.owner },
        'deleted ExternalArtifact for source-watcher to re-create',
      );
    } catch (e) {
      if (isKubeError(e, 'NotFound')) continue;
      if (isKubeError(e, 'Conflict')) return false;
      throw e;
    }
  }
  return true;
}

/**
 * The recreate targets source-watcher could not re-create, each as "ns/name (as IDENTITY)": v2.3
 * applies as spec.serviceAccountName when set (asked of the API server's authorizer), else as
 * itself in the AG's namespace and as a default ServiceAccount this cannot see elsewhere.
 */
async function unrecreatable(
  ag: ArtifactGenerator,
  decision: Extract<HealDecision, { kind: 'heal' }>,
  deps: HealDeps,
): Promise<string[]> {
  const left: string[] = [];
  for (const t of decision.recreate) {
    const id = recreateIdentityFor(ag, t.namespace);
    if (id.kind === 'controller') continue;
    if (id.kind === 'service-account') {
      const sa = { namespace: id.namespace, name: id.name };
      if (await deps.externalArtifacts.mayApplyExternalArtifacts(sa, t.namespace)) continue;
      left.push(`${t.namespace}/${t.name} (as ServiceAccount ${id.namespace}/${id.name})`);
    } else {
      left.push(`${t.namespace}/${t.name} (as source-watcher's default ServiceAccount)`);
    }
  }
  return left;
}

/** Its ExternalArtifacts, namespace by namespace (source-watcher's rule: never cluster-wide). */
async function listAll(
  uid: string,
  namespaces: readonly string[],
  cached: boolean,
  deps: HealDeps,
): Promise<ExternalArtifact[]> {
  const items: ExternalArtifact[] = [];
  for (const namespace of namespaces) {
    let token: string | undefined;
    do {
      const page = await deps.externalArtifacts.listExternalArtifacts({
        namespace,
        labelSelector: generatorSelector(uid),
        cached,
        limit: PAGE_SIZE,
        ...(token !== undefined ? { continueToken: token } : {}),
      });
      items.push(...page.items);
      token = page.continueToken;
    } while (token !== undefined);
  }
  return items;
}

function rvOf(ag: ArtifactGenerator): string {
  const rv = ag.metadata?.resourceVersion;
  if (rv === undefined || rv === '') throw new Error('object has no resourceVersion');
  return rv;
}
