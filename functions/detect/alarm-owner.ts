// The follow-up alarm's owner (docs/adr/0067): the resync PingSource of the same install, its uid
// read from the API server before each write that needs it (a uid kept from an earlier resync
// object would let the garbage collector remove a fresh alarm at once). When the owner cannot be
// read (absent: the install is going, or someone removed it; or any API error), the alarm is
// still written, without an owner, because the recovery needs it more than the clean-up does;
// a later write adopts it. Each cause is logged once per process, and at debug after that.

import { alarmOwnerReference } from '../../shared/core/follow-up/alarm-owner.js';
import type { OwnerReference } from '../../shared/core/objects/types.js';
import { isKubeError } from '../../shared/kube/errors.js';
import type { KubePort } from '../../shared/kube/port.js';
import type { FunctionConfig } from '../../shared/runtime/env.js';
import type { Logger } from '../../shared/runtime/logger.js';
import { createWarnOnce } from '../../shared/runtime/warn-once.js';

/** The owner references for the alarm, or null when the owner is unknown now. */
export type AlarmOwner = (log: Logger) => Promise<OwnerReference[] | null>;

export function createAlarmOwner(deps: {
  kube: KubePort;
  config: Pick<FunctionConfig, 'alarm' | 'resyncPingSource'>;
}): AlarmOwner {
  const { namespace } = deps.config.alarm;
  const name = deps.config.resyncPingSource;
  const warnOnce = createWarnOnce();
  return async (log) => {
    const owner = `${namespace}/${name}`;
    try {
      const uid = (await deps.kube.getPingSource(namespace, name)).metadata?.uid;
      if (uid !== undefined && uid !== '') return [alarmOwnerReference(name, uid)];
      warnOnce('no-uid', log, { owner }, 'alarm owner has no uid; alarm written without an owner');
    } catch (e) {
      if (!isKubeError(e)) throw e;
      warnOnce(
        e.kind,
        log,
        { owner, error: e.kind, detail: e.message },
        e.kind === 'NotFound'
          ? 'alarm owner not found; alarm written without an owner'
          : 'alarm owner unreadable; alarm written without an owner',
      );
    }
    return null;
  };
}
