// heal-external-artifacts: an ExternalArtifact of an AG was changed or deleted. source-watcher
// does not watch them (fluxcd/source-watcher#346); this asks it to look, once per drift, when the
// AG is settled and the drift is not its own build in flight (docs/adr/0038).

import {
  APISERVER_ADD,
  APISERVER_DELETE,
  APISERVER_UPDATE,
} from '../../shared/core/objects/cloudevent-types.js';
import {
  EA_API_GROUP,
  EA_KIND,
  generatorOf,
  generatorUidOf,
  parseExternalArtifact,
} from '../../shared/core/external-artifacts/objects.js';
import type { IncomingEvent } from '../../shared/runtime/cloudevent-http.js';
import type { Logger } from '../../shared/runtime/logger.js';
import {
  handled,
  ignored,
  malformed,
  retryLater,
  type Outcome,
} from '../../shared/runtime/outcome.js';
import { resourceEventKind } from '../../shared/runtime/resource-cloudevent.js';
import type { HealDeps } from './deps.js';
import { healGenerator } from './heal.js';

export async function handleHeal(
  event: IncomingEvent,
  log: Logger,
  deps: HealDeps,
): Promise<Outcome> {
  if (
    event.type !== APISERVER_UPDATE &&
    event.type !== APISERVER_DELETE &&
    event.type !== APISERVER_ADD
  ) {
    return ignored('unknown-type');
  }
  if (resourceEventKind(event, EA_KIND, EA_API_GROUP) === 'other') return ignored('other-kind');
  if (!deps.config.heal.enabled) return ignored('disabled');
  const parsed = parseExternalArtifact(event.data);
  if (!parsed.ok) {
    log.warn({ reason: parsed.error }, 'malformed event data');
    return malformed('malformed-data');
  }
  const ref = generatorOf(parsed.ea);
  const uid = generatorUidOf(parsed.ea);
  if (ref === null || uid === null) return ignored('not-generated');
  const agLog = log.child({
    namespace: ref.namespace,
    name: ref.name,
    externalArtifact: `${parsed.ea.metadata?.namespace}/${parsed.ea.metadata?.name}`,
  });
  const result = await healGenerator(
    { ref, uid, observed: parsed.ea, observedDeleted: event.type === APISERVER_DELETE },
    deps,
    agLog,
  );
  return result === 'conflict' ? retryLater('conflict') : handled(result);
}
