// What detect's cells of the fault matrix run on: an AG (stuck on the server, or in its grace
// period and only in the event) and an alarm PingSource of the cell's own. detect writes only that
// alarm; a cell's end state is the alarm plus the action events detect emitted about its AG.

import type { CloudEventV1 } from 'cloudevents';
import { APISERVER_REF_UPDATE } from '../../../../shared/core/index.js';
import {
  AG_API_VERSION,
  AG_KIND,
  type AgRef,
  type ArtifactGenerator,
} from '../../../../shared/core/objects/types.js';
import {
  agRefOf,
  deleteArtifactGenerator,
  makeArtifactGenerator,
  uniqueName,
} from '../../../support/apiserver.js';
import { createAgWithStatus, INVENTORY, DIGEST, stuckStatus } from '../../../support/ag-states.js';
import { agResourceEvent, cloudEvent, postEvent } from '../../../support/http-events.js';
import { deleteAlarm, readAlarm } from '../../../support/recovery-alarm.js';
import { progressing } from '../../../support/conditions.js';
import { SettableClock, startFunction } from '../../../harness/functions.js';
import { waitForCachedAg } from '../cache-wait.js';
import type { FunctionFile } from '../function-file.js';
import type { MatrixFixtures } from '../matrix-suite.js';

export interface DetectCtx {
  readonly alarm: string;
  /** The subject of the emitted events that count toward the end state. */
  readonly subject: string;
  readonly ref: AgRef;
  readonly onServer: boolean;
  /** The AG the event carries. */
  readonly data: ArtifactGenerator;
}

export interface DetectFixtures extends MatrixFixtures<DetectCtx> {
  /** A stuck AG on the server (and in the watch cache). */
  readonly stuckOnServer: () => Promise<DetectCtx>;
  /** An AG in its grace period, not on the server: due at T0 + 20 s, the alarm for T0 + 21 s. */
  readonly inGrace: () => Promise<DetectCtx>;
  /** inGrace, its alarm armed for T0 + 30 s first: the event (due T0 + 20 s) moves it earlier. */
  readonly inGraceAlarmLater: () => Promise<DetectCtx>;
  /** inGrace's alarm armed for about T0 - 54 s, a moment passed by T0: the sweep removes it. */
  readonly alarmPassed: () => Promise<DetectCtx>;
  /** The reference-mode event about the context's AG. */
  readonly refEvent: (ctx: DetectCtx) => CloudEventV1<unknown>;
}

/** An AG in its grace period: Ready Unknown since `sinceAgo` ms before `at`; due 30 s later. */
function graceAg(ref: AgRef, at: number, sinceAgo: number): ArtifactGenerator {
  const ag = makeArtifactGenerator({ name: ref.name, namespace: ref.namespace });
  return {
    ...ag,
    metadata: { ...ag.metadata, generation: 1, resourceVersion: '7', uid: 'u' },
    status: {
      inventory: INVENTORY,
      observedSourcesDigest: DIGEST,
      conditions: [progressing(at - sinceAgo)],
    },
  };
}

/** A cell's context: its own alarm, the AG `ref` (on the server or not) and its event data. */
const ctxOf = (ref: AgRef, onServer: boolean, data: ArtifactGenerator): DetectCtx => ({
  alarm: uniqueName('alarm'),
  subject: `${ref.namespace}/${ref.name}`,
  ref,
  onServer,
  data,
});

export function detectFixtures({ T0, NS, kc, suite }: FunctionFile): DetectFixtures {
  const inGrace = (): DetectCtx => {
    const ref = { namespace: NS, name: uniqueName('grace') };
    return ctxOf(ref, false, graceAg(ref, T0, 10_000));
  };

  /** Arms the alarm fault-free, with its own clock and its own client tag. */
  const armAlarm = async (ctx: DetectCtx, at: number, sinceAgo: number): Promise<void> => {
    const server = await startFunction({
      fn: 'detect',
      kubeConfig: suite.proxy.kubeConfig('setup-detect'),
      clock: new SettableClock(at),
      sinkUrl: suite.sink.url,
      env: { ALARM_NAME: ctx.alarm },
    });
    try {
      const answer = await postEvent(server.url, agResourceEvent(graceAg(ctx.ref, at, sinceAgo)));
      if (answer.status !== 200) throw new Error(`arming the alarm answered ${answer.status}`);
    } finally {
      await server.close();
    }
  };

  return {
    redeliverAdvanceMs: 0,
    event: (ctx) => agResourceEvent(ctx.data),
    env: (ctx) => ({ ALARM_NAME: ctx.alarm }),
    state: async (ctx) => {
      const alarm = await readAlarm(kc, ctx.alarm);
      const emitted = [
        ...new Set(suite.sink.events.filter((e) => e.subject === ctx.subject).map((e) => e.type)),
      ].sort();
      return {
        emitted,
        alarm:
          alarm === null ? null : { dueInMs: alarm.moment === null ? null : alarm.moment - T0 },
      };
    },
    // detect's own invariant (it writes no AG or PackageSource) is checked across all cells.
    check: () => Promise.resolve([]),
    cleanup: async (ctx) => {
      if (ctx.onServer) await deleteArtifactGenerator(ctx.ref, kc);
      await deleteAlarm(kc, ctx.alarm);
    },

    stuckOnServer: async () => {
      const ag = await createAgWithStatus(kc, stuckStatus(T0 - 60_000), { namespace: NS });
      await waitForCachedAg(agRefOf(ag), ag.metadata?.resourceVersion);
      return ctxOf(agRefOf(ag), true, ag);
    },
    inGrace: () => Promise.resolve(inGrace()),
    inGraceAlarmLater: async () => {
      const ctx = inGrace();
      await armAlarm(ctx, T0, 1_000);
      return ctx;
    },
    alarmPassed: async () => {
      const ctx = inGrace();
      await armAlarm(ctx, T0 - 60_000, 25_000);
      // No AG is this cell's: no emitted event counts toward its end state.
      return { ...ctx, subject: `${NS}/none` };
    },
    refEvent: (ctx) =>
      cloudEvent({
        type: APISERVER_REF_UPDATE,
        source: 'https://10.96.0.1:443',
        data: { kind: AG_KIND, apiVersion: AG_API_VERSION, ...ctx.ref },
        extensions: {
          kind: AG_KIND,
          apiversion: AG_API_VERSION,
          name: ctx.ref.name,
          namespace: ctx.ref.namespace,
        },
      }),
  };
}
