// What surface-stalled's cells of the fault matrix run on: a PackageSource and its AG of the
// cell's own, the AG past its last attempt's window (given up), so the fault-free end state is
// Ready=False/SourceWatcherStalled on the PackageSource. The checks: the PackageSource is never
// anything but Stalled, and the AG is never written (surface-stalled writes only PackageSource
// status).

import type { CloudEventV1 } from 'cloudevents';
import {
  ANNOTATION_ATTEMPTS,
  ANNOTATION_LAST_RECOVERY_AT,
  ANNOTATION_REQUESTED_AT,
  formatTimeNano,
  REASON_FORCED,
  REASON_STALLED,
} from '../../../../shared/core/index.js';
import type {
  AgRef,
  ArtifactGenerator,
  PackageSource,
} from '../../../../shared/core/objects/types.js';
import {
  agRefOf,
  createPackageSource,
  deleteArtifactGenerator,
  deletePackageSource,
  getArtifactGenerator,
  getPackageSource,
  makePackageSource,
  uniqueName,
} from '../../../support/apiserver.js';
import { createAgWithStatus, stuckStatus } from '../../../support/ag-states.js';
import { agResourceEvent } from '../../../support/http-events.js';
import { marker } from '../../../support/conditions.js';
import { waitForCachedAg, waitForCachedPs } from '../cache-wait.js';
import type { FunctionFile } from '../function-file.js';
import type { MatrixFixtures } from '../matrix-suite.js';
import { UNHURRIED_EVENT_MS } from '../event-write-cells.js';

export interface SurfaceStalledCtx {
  readonly ref: AgRef;
  readonly ag: ArtifactGenerator;
  readonly psName: string;
}

export interface SurfaceStalledFixtures extends MatrixFixtures<SurfaceStalledCtx> {
  /** The AG event claiming a newer resourceVersion than the cache serves: a fresh read follows. */
  readonly newerThanCache: (ctx: SurfaceStalledCtx) => CloudEventV1<unknown>;
}

/** The PackageSource's conditions with the AG's name replaced, so that twins compare equal. */
function normalized(ps: PackageSource, ctx: SurfaceStalledCtx): unknown {
  return (ps.status?.conditions ?? []).map((c) => ({
    ...c,
    message: (c.message ?? '')
      .split(ctx.ref.name)
      .join('<name>')
      .split(ctx.ref.namespace)
      .join('<ns>'),
  }));
}

export function surfaceStalledFixtures({ T0, NS, kc }: FunctionFile): SurfaceStalledFixtures {
  const last = T0 - 5 * 60_000;

  return {
    redeliverAdvanceMs: 0,
    /** A PackageSource and its AG after the last attempt's window closed: surface Stalled. */
    setup: async () => {
      const name = uniqueName('ss');
      const ps = await createPackageSource(makePackageSource({ name }), kc);
      const ag = await createAgWithStatus(
        kc,
        { ...stuckStatus(last - 60_000), conditions: [marker(last)] },
        {
          name,
          namespace: NS,
          owner: { name, uid: ps.metadata?.uid ?? '' },
          annotations: {
            [ANNOTATION_ATTEMPTS]: '5',
            [ANNOTATION_LAST_RECOVERY_AT]: formatTimeNano(last),
            [ANNOTATION_REQUESTED_AT]: formatTimeNano(last),
          },
        },
      );
      await waitForCachedAg(agRefOf(ag), ag.metadata?.resourceVersion);
      await waitForCachedPs(name, ps.metadata?.resourceVersion);
      return { ref: agRefOf(ag), ag, psName: name };
    },
    event: (ctx) => agResourceEvent(ctx.ag),
    // The AGs live in NS: the functions take it for a PackageSource namespace (ADR 53). A
    // verdict's Event that times out is owed (503, docs/adr/0061): on a loaded machine the cells
    // that fault another call give Events all the time they need.
    env: () => ({
      RECOVERY_PACKAGESOURCE_AG_NAMESPACES: NS,
      EVENT_WRITE_TIMEOUT_MS: String(UNHURRIED_EVENT_MS),
    }),
    state: async (ctx) => normalized(await getPackageSource(ctx.psName, kc), ctx),
    check: async (ctx) => {
      const out: string[] = [];
      const ps = await getPackageSource(ctx.psName, kc);
      for (const c of ps.status?.conditions ?? []) {
        if (c.reason === REASON_FORCED)
          out.push('SourceWatcherRecoveryForced on the PackageSource');
      }
      const ready = (ps.status?.conditions ?? []).find((c) => c.type === 'Ready');
      if (ready !== undefined && ready.reason !== REASON_STALLED) {
        out.push(
          `PackageSource Ready is ${ready.status}/${ready.reason}, never anything but Stalled here`,
        );
      }
      if (ready !== undefined && ready.observedGeneration !== ps.metadata?.generation) {
        out.push('PackageSource Ready observedGeneration is not its own generation');
      }
      const ag = await getArtifactGenerator(ctx.ref, kc);
      if (ag.metadata?.resourceVersion !== ctx.ag.metadata?.resourceVersion) {
        out.push('the AG was written (surface-stalled writes only PackageSource status)');
      }
      return out;
    },
    cleanup: async (ctx) => {
      await deleteArtifactGenerator(ctx.ref, kc);
      await deletePackageSource(ctx.psName, kc);
    },

    newerThanCache: (ctx) => {
      const newer: ArtifactGenerator = {
        ...ctx.ag,
        metadata: {
          ...ctx.ag.metadata,
          resourceVersion: String(BigInt(ctx.ag.metadata?.resourceVersion ?? '0') + 1000n),
        },
      };
      return agResourceEvent(newer);
    },
  };
}
