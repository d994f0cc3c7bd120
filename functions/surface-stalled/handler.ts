// surface-stalled: the only writer of PackageSource Ready. It keeps the owning PackageSource's
// Ready in step with its AG: the honest copy-through, the Awaiting window and the Stalled verdict.

import {
  APISERVER_ADD,
  APISERVER_DELETE,
  APISERVER_REF_ADD,
  APISERVER_REF_DELETE,
  APISERVER_REF_UPDATE,
  APISERVER_UPDATE,
  ACTION_STALLED,
  PING,
} from '../../shared/core/objects/cloudevent-types.js';
import { parseActionData, parseArtifactGenerator } from '../../shared/core/objects/parse.js';
import type { AgRef, ArtifactGenerator } from '../../shared/core/objects/types.js';
import { agEventKind, refFromEventData } from '../../shared/runtime/ag-cloudevent.js';
import type { IncomingEvent } from '../../shared/runtime/cloudevent-http.js';
import { deliverySignal } from '../../shared/runtime/delivery.js';
import { owedAnswer, owedFirst, owedRedelivery, tracked } from './owed.js';
import type { Logger } from '../../shared/runtime/logger.js';
import {
  handled,
  ignored,
  malformed,
  retryLater,
  type Outcome,
} from '../../shared/runtime/outcome.js';
import type { SurfaceStalledDeps } from './deps.js';
import { syncOne } from './sync-one.js';
import { syncAll } from './sync-all.js';

export async function handleSurfaceStalled(
  event: IncomingEvent,
  log: Logger,
  deps: SurfaceStalledDeps,
): Promise<Outcome> {
  let ref: AgRef | undefined;
  let seen: ArtifactGenerator | undefined;
  let verdictAsked = false;
  switch (event.type) {
    case APISERVER_ADD:
    case APISERVER_UPDATE: {
      if (agEventKind(event) === 'other') return ignored('other-kind');
      const parsed = parseArtifactGenerator(event.data);
      if (!parsed.ok) {
        log.warn({ reason: parsed.error }, 'malformed event data');
        return malformed('malformed-data');
      }
      const meta = parsed.ag.metadata ?? {};
      ref = { namespace: meta.namespace ?? '', name: meta.name ?? '' };
      seen = parsed.ag;
      break;
    }
    case APISERVER_REF_ADD:
    case APISERVER_REF_UPDATE:
      if (agEventKind(event) === 'other') return ignored('other-kind');
      ref = refFromEventData(event.data);
      if (ref === undefined) return malformed('malformed-data');
      break;
    case ACTION_STALLED: {
      const parsed = parseActionData(event.data);
      if (!parsed.ok) {
        log.warn({ reason: parsed.error }, 'malformed event data');
        return malformed('malformed-data');
      }
      ref = { namespace: parsed.value.namespace, name: parsed.value.name };
      verdictAsked = true;
      break;
    }
    case APISERVER_DELETE:
    case APISERVER_REF_DELETE:
      return ignored('delete');
    case PING: {
      const paid = await owedRedelivery(event.id, null, deps, log);
      if (paid !== null) return paid;
      const r = await syncAll(log, deps);
      return r.result === 'event-owed' ? owedAnswer(event.id, null, 'resynced', deps) : r;
    }
    default:
      return ignored('unknown-type');
  }
  const agLog = log.child({ namespace: ref.namespace, name: ref.name });
  const agKey = `${ref.namespace}/${ref.name}`;
  // The redelivery of this process's `event-owed` answer: only the sync's Events are left.
  const paid = await owedRedelivery(event.id, agKey, deps, agLog);
  if (paid !== null) return paid;
  // The verdict Events this process owes about the AG first (docs/adr/0061): a verdict whose
  // Event failed answered 503, and this may be its redelivery.
  const owed = await owedFirst(agKey, deps, agLog);
  const record = tracked(deps, agLog);
  // One sync per AG at a time; an AG event whose version a sync it waited for has read needs none
  // of its own (ADR 50). Only a version read from the API server covers: the event's is a hint.
  // The wait ends with the delivery (ADR 57).
  const done = await deps.turns.run(
    agKey,
    seen?.metadata?.resourceVersion,
    () => syncOne(ref, seen, deps, agLog, { record, verdictAsked }),
    deliverySignal(),
  );
  if (done !== 'covered' && done.result === 'conflict') return retryLater('conflict');
  if (owed === 'owed' || record.owes()) {
    return owedAnswer(event.id, agKey, done === 'covered' ? 'covered' : done.result, deps);
  }
  if (done === 'covered') {
    agLog.debug({ decision: 'covered' }, 'synced by a concurrent delivery');
    return handled('covered');
  }
  return handled(done.result);
}
