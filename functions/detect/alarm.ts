// The follow-up alarm's I/O: read, create, re-program or delete the one PingSource, with
// resourceVersion preconditions. The plan comes from shared/core/follow-up/alarm.ts.

import {
  alarmMoment,
  ANNOTATION_ALARM_MOMENT,
  armedTooLate,
  cronFor,
  planEnsure,
  planSettle,
} from '../../shared/core/follow-up/alarm.js';
import { ALARM_LABELS, ownedBy } from '../../shared/core/follow-up/alarm-owner.js';
import { TIMER_ALARM, TIMER_EXTENSION } from '../../shared/core/objects/cloudevent-types.js';
import { formatTimeNano, parseTime } from '../../shared/core/codecs/time.js';
import { PING_API_VERSION, PING_KIND } from '../../shared/core/objects/types.js';
import type { Clock } from '../../shared/runtime/clock.js';
import type { FunctionConfig } from '../../shared/runtime/env.js';
import type { Logger } from '../../shared/runtime/logger.js';
import { isKubeError } from '../../shared/kube/errors.js';
import { againOnConflict, redecide } from '../../shared/kube/redecide.js';
import type { KubePort, PingSource } from '../../shared/kube/port.js';
import { createAlarmOwner } from './alarm-owner.js';
import type { FollowUps } from './deps.js';

/** An alarm whose write completed too late is moved out at most this many times. */
const MOVE_OUT_ROUNDS = 4;

interface Armed {
  readonly exists: boolean;
  readonly moment: number | null;
  readonly resourceVersion: string | undefined;
  /** It names its owner, the resync PingSource (docs/adr/0067). */
  readonly owned: boolean;
}

export function createAlarmFollowUps(deps: {
  kube: KubePort;
  clock: Clock;
  config: Pick<FunctionConfig, 'alarm' | 'resyncPingSource'>;
}): FollowUps {
  const { namespace, name, sinkBroker } = deps.config.alarm;
  const ownerOf = createAlarmOwner(deps);
  // The last armed moment this instance saw. While it is in the future, it can only move earlier
  // (see shared/core/follow-up/alarm.ts), so an event due after it needs no read at all.
  let knownFutureMoment: number | null = null;
  // This instance writes the alarm one delivery at a time. A delivery that finds another's write
  // in flight waits for it, then looks at knownFutureMoment again: when that write covers its due
  // time it makes no call at all. Otherwise concurrent deliveries all read the same alarm, and all
  // but one of their writes lose a 409 and read it again (bench P9: a storm's held calls keep many
  // deliveries in flight at once; docs/adr/0070).
  let writing: Promise<void> | undefined;
  // Called only once `writing` is undefined, with no await in between.
  const exclusive = async (work: () => Promise<void>): Promise<void> => {
    const mine = work();
    writing = mine;
    try {
      await mine;
    } finally {
      if (writing === mine) writing = undefined;
    }
  };

  const read = async (): Promise<Armed> => {
    try {
      const ps = await deps.kube.getPingSource(namespace, name);
      return {
        exists: true,
        moment: parseTime(ps.metadata?.annotations?.[ANNOTATION_ALARM_MOMENT]),
        resourceVersion: ps.metadata?.resourceVersion,
        owned: ownedBy(ps.metadata?.ownerReferences, deps.config.resyncPingSource),
      };
    } catch (e) {
      if (isKubeError(e, 'NotFound'))
        return { exists: false, moment: null, resourceVersion: undefined, owned: false };
      throw e;
    }
  };

  const write = async (armed: Armed, moment: number, log: Logger): Promise<PingSource> => {
    const annotations = { [ANNOTATION_ALARM_MOMENT]: formatTimeNano(moment) };
    // An alarm without its owner (created while the owner was unreadable) is adopted now.
    const owners = armed.owned ? null : await ownerOf(log);
    const ownership = owners !== null ? { ownerReferences: owners } : {};
    const spec = {
      schedule: cronFor(moment),
      timezone: 'UTC',
      contentType: 'application/json',
      data: JSON.stringify({ purpose: 'follow-up', due: formatTimeNano(moment) }),
      // The detect-alarm Trigger matches on it; in every write, so an alarm made before it gets it.
      ceOverrides: { extensions: { [TIMER_EXTENSION]: TIMER_ALARM } },
    };
    if (!armed.exists) {
      const body: PingSource = {
        apiVersion: PING_API_VERSION,
        kind: PING_KIND,
        metadata: { name, namespace, annotations, labels: { ...ALARM_LABELS }, ...ownership },
        spec: {
          ...spec,
          sink: {
            ref: {
              apiVersion: 'eventing.knative.dev/v1',
              kind: 'Broker',
              name: sinkBroker,
              namespace,
            },
          },
        },
      };
      return deps.kube.createPingSource(namespace, body);
    } else {
      return deps.kube.patchPingSource(
        namespace,
        name,
        { metadata: { annotations, labels: { ...ALARM_LABELS }, ...ownership }, spec },
        armed.resourceVersion !== undefined ? { resourceVersion: armed.resourceVersion } : {},
      );
    }
  };

  /**
   * Writes `moment`, and when the write completes too close to it (the API server held it), moves
   * it out to the margin again with the written object's resourceVersion, so that the PingSource
   * adapter picks it up before it passes (docs/adr/0044). Returns the moment left armed.
   */
  const writeInTime = async (armed: Armed, moment: number, log: Logger): Promise<number> => {
    let current = armed;
    let m = moment;
    for (let round = 1; ; round++) {
      const written = await write(current, m, log);
      const now = deps.clock.now();
      if (!armedTooLate(m, now) || round >= MOVE_OUT_ROUNDS) return m;
      log.warn(
        { alarmAt: formatTimeNano(m), completedAt: formatTimeNano(now) },
        'follow-up armed too late; moving it out',
      );
      current = {
        exists: true,
        moment: m,
        resourceVersion: written.metadata?.resourceVersion,
        owned: ownedBy(written.metadata?.ownerReferences, deps.config.resyncPingSource),
      };
      m = alarmMoment(m, now);
    }
  };

  /** Runs `step` until it stops conflicting (create races give Conflict too). */
  const withRetries = async (step: () => Promise<void>): Promise<void> => {
    let conflict: unknown;
    await redecide<void>(
      async () => {
        try {
          await step();
          return;
        } catch (e) {
          conflict = e;
          return againOnConflict(e);
        }
      },
      {
        exhausted: () => {
          throw conflict;
        },
      },
    );
  };

  return {
    async ensureBy(dueMs: number, log: Logger): Promise<void> {
      for (;;) {
        if (planEnsure(knownFutureMoment, dueMs, deps.clock.now()).kind === 'keep') return;
        if (writing === undefined) break;
        await writing.catch(() => undefined);
      }
      await exclusive(() =>
        withRetries(async () => {
          const armed = await read();
          const plan = planEnsure(armed.moment, dueMs, deps.clock.now());
          if (plan.kind === 'keep') {
            knownFutureMoment = armed.moment;
            return;
          }
          const moment = await writeInTime(armed, plan.moment, log);
          knownFutureMoment = moment;
          log.info(
            { alarmAt: formatTimeNano(moment), due: formatTimeNano(dueMs) },
            'follow-up armed',
          );
        }),
      );
    },

    async settle(earliestDueMs: number | null, log: Logger): Promise<void> {
      while (writing !== undefined) await writing.catch(() => undefined);
      await exclusive(() =>
        withRetries(async () => {
          const armed = await read();
          const now = deps.clock.now();
          const plan = planSettle(armed.moment, armed.exists, earliestDueMs, now);
          if (plan.kind === 'keep') {
            knownFutureMoment = armed.moment !== null && armed.moment > now ? armed.moment : null;
            return;
          }
          if (plan.kind === 'delete') {
            try {
              await deps.kube.deletePingSource(
                namespace,
                name,
                armed.resourceVersion !== undefined
                  ? { resourceVersion: armed.resourceVersion }
                  : {},
              );
            } catch (e) {
              if (!isKubeError(e, 'NotFound')) throw e;
            }
            knownFutureMoment = null;
            log.info({}, 'follow-up alarm removed');
            return;
          }
          const moment = await writeInTime(armed, plan.moment, log);
          knownFutureMoment = moment;
          log.info({ alarmAt: formatTimeNano(moment) }, 'follow-up re-programmed');
        }),
      );
    },
  };
}
