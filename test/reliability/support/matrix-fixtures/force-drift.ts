// What force-drift's cells of the fault matrix run on: an AG of the cell's own, stuck (the event
// is detect's force) or healthy with two forces tracked (the event is detect's clear-tracking).
// A cell's end state is the AG's recovery projection; its checks are the AG contract at every
// stage (and, for a clear, that the tracking is cleared only on a healthy AG).

import type { CloudEventV1 } from 'cloudevents';
import {
  ACTION_CLEAR_TRACKING,
  ACTION_FORCE,
  ANNOTATION_ATTEMPTS,
  ANNOTATION_REQUESTED_AT,
  readyOf,
  RESUME_SETTLE_MS,
} from '../../../../shared/core/index.js';
import type {
  AgRef,
  ArtifactGenerator,
  ArtifactGeneratorStatus,
} from '../../../../shared/core/objects/types.js';
import {
  agRefOf,
  deleteArtifactGenerator,
  getArtifactGenerator,
} from '../../../support/apiserver.js';
import { createAgWithStatus, healthyStatus, stuckStatus } from '../../../support/ag-states.js';
import { actionEvent as detectAction } from '../../../support/http-events.js';
import { trackingAnnotations } from '../../../integration/functions/suite-kit.js';
import {
  agViolations,
  attemptHistoryViolations,
  attemptsOf,
  recoveryProjection,
} from '../ag-contract.js';
import type { FunctionFile } from '../function-file.js';
import type { CallTarget, MatrixFixtures } from '../matrix-suite.js';
import { UNHURRIED_EVENT_MS } from '../event-write-cells.js';

export interface ForceDriftCtx {
  readonly ref: AgRef;
  readonly created: ArtifactGenerator;
  /** The AG is healthy and tracked: the event clears the tracking. */
  readonly clear: boolean;
  /** The AG as read at each check. */
  readonly history: ArtifactGenerator[];
}

export interface ForceDriftFixtures extends MatrixFixtures<ForceDriftCtx> {
  /** A stuck AG (its event: detect's force). */
  readonly stuck: () => Promise<ForceDriftCtx>;
  /** A healthy AG with two forces tracked, the last 100 s before T0 (its event: clear-tracking). */
  readonly healthyTracked: () => Promise<ForceDriftCtx>;
  /** The `nth` (1-based, the first by default) call of `verb` on the context's AG. */
  readonly agCall: (
    verb: 'get' | 'patch',
    opts?: { subresource?: string; nth?: number },
  ) => CallTarget<ForceDriftCtx>;
}

/** Past the resume settle time: a claim left without its marker or bump is finished then. */
export const REDELIVER_AFTER_MS = RESUME_SETTLE_MS + 1000;

/** detect's action of `type` about `ag`, with the attempts the AG records, decided at `at`. */
export const detectActionAbout = (type: string, ag: ArtifactGenerator, at: number) =>
  detectAction(type, ag, attemptsOf(ag), at);

export function forceDriftFixtures({ T0, NS, kc }: FunctionFile): ForceDriftFixtures {
  /** Two forces, the last 100 s before T0. */
  const tracked = trackingAnnotations(2, T0 - 100_000);

  const setup = async (kind: 'stuck' | 'healthy-tracked'): Promise<ForceDriftCtx> => {
    const status: ArtifactGeneratorStatus =
      kind === 'stuck' ? stuckStatus(T0 - 60_000) : healthyStatus(T0 - 10_000);
    const created = await createAgWithStatus(kc, status, {
      namespace: NS,
      ...(kind === 'healthy-tracked' ? { annotations: tracked } : {}),
    });
    return { ref: agRefOf(created), created, clear: kind === 'healthy-tracked', history: [] };
  };

  return {
    redeliverAdvanceMs: REDELIVER_AFTER_MS,
    event: (ctx): CloudEventV1<unknown> =>
      detectActionAbout(ctx.clear ? ACTION_CLEAR_TRACKING : ACTION_FORCE, ctx.created, T0),
    // A step's Event that times out is owed (503, docs/adr/0061): on a loaded machine the other
    // cells' Events get all the time they need.
    env: () => ({ EVENT_WRITE_TIMEOUT_MS: String(UNHURRIED_EVENT_MS) }),
    state: async (ctx) =>
      recoveryProjection(await getArtifactGenerator(ctx.ref, kc), [T0, T0 + REDELIVER_AFTER_MS]),
    check: async (ctx) => {
      const ag = await getArtifactGenerator(ctx.ref, kc);
      ctx.history.push(ag);
      const out = agViolations(ag);
      if (ctx.clear) {
        // Clearing resets the count, which is allowed only for a healthy AG.
        if (
          ag.metadata?.annotations?.[ANNOTATION_ATTEMPTS] === undefined &&
          readyOf(ag)?.status !== 'True'
        ) {
          out.push('tracking cleared on an AG that is not healthy');
        }
        if (
          ag.metadata?.annotations?.[ANNOTATION_REQUESTED_AT] !== tracked[ANNOTATION_REQUESTED_AT]
        ) {
          out.push('requestedAt changed by a clear');
        }
      } else {
        out.push(...attemptHistoryViolations(ctx.history));
      }
      return out;
    },
    cleanup: (ctx) => deleteArtifactGenerator(ctx.ref, kc),

    stuck: () => setup('stuck'),
    healthyTracked: () => setup('healthy-tracked'),
    agCall:
      (verb, opts = {}) =>
      (ctx) => ({
        match: {
          resource: 'artifactgenerators',
          name: ctx.ref.name,
          verb,
          ...(opts.subresource !== undefined ? { subresource: opts.subresource } : {}),
        },
        ...(opts.nth !== undefined ? { nth: opts.nth } : {}),
      }),
  };
}
