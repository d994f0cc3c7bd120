// Fault matrix for surface-stalled: every API call it makes x {500, 429, 409, timeout, reset, slow}
// (the PackageSource status write also with the answer lost after it applied). The AG has given
// up, so the fault-free end state is Ready=False/SourceWatcherStalled on its PackageSource.

import { afterAll, describe, expect, it } from 'vitest';
import {
  ANNOTATION_ATTEMPTS,
  ANNOTATION_LAST_RECOVERY_AT,
  ANNOTATION_REQUESTED_AT,
  formatTimeNano,
  REASON_FORCED,
  REASON_STALLED,
} from '../../shared/core/index.js';
import type { AgRef, ArtifactGenerator, PackageSource } from '../../shared/core/objects/types.js';
import {
  agRefOf,
  createPackageSource,
  deleteArtifactGenerator,
  deletePackageSource,
  getArtifactGenerator,
  getPackageSource,
  makePackageSource,
  uniqueName,
} from '../support/apiserver.js';
import { createAgWithStatus, stuckStatus } from '../support/ag-states.js';
import { agResourceEvent } from '../support/http-events.js';
import { waitForCachedAg, waitForCachedPs } from './support/cache-wait.js';
import { agGet, conflictReread, MatrixTable, redelivered } from './support/fault-matrix.js';
import type { MatrixScenario } from './support/fault-matrix.js';
import { READ_VERBS } from './support/fuzz-runner.js';
import { defineMatrix } from './support/matrix-suite.js';
import { functionFile } from './support/function-file.js';
import { resyncPing } from '../support/http-events.js';
import { marker } from '../support/conditions.js';

// The resync lists every AG and PackageSource: keep the cluster to this file's objects.
const { T0, NS, kc, suite } = functionFile(
  'matrix-surface-stalled',
  'rel-ss',
  'ags-and-packagesources',
);
const table = new MatrixTable('surface-stalled');
afterAll(() => console.log(table.render()));

interface Ctx {
  readonly ref: AgRef;
  readonly ag: ArtifactGenerator;
  readonly psName: string;
}

const LAST = T0 - 5 * 60_000;
/** This file's AGs live in NS: the functions take it for a PackageSource namespace (ADR 53). */
const OWNED_IN_NS = { RECOVERY_PACKAGESOURCE_AG_NAMESPACES: NS };

/** A PackageSource and its AG after the last attempt's window closed: surface Stalled. */
async function setup(): Promise<Ctx> {
  const name = uniqueName('ss');
  const ps = await createPackageSource(makePackageSource({ name }), kc);
  const ag = await createAgWithStatus(
    kc,
    { ...stuckStatus(LAST - 60_000), conditions: [marker(LAST)] },
    {
      name,
      namespace: NS,
      owner: { name, uid: ps.metadata?.uid ?? '' },
      annotations: {
        [ANNOTATION_ATTEMPTS]: '5',
        [ANNOTATION_LAST_RECOVERY_AT]: formatTimeNano(LAST),
        [ANNOTATION_REQUESTED_AT]: formatTimeNano(LAST),
      },
    },
  );
  await waitForCachedAg(agRefOf(ag), ag.metadata?.resourceVersion);
  await waitForCachedPs(name, ps.metadata?.resourceVersion);
  return { ref: agRefOf(ag), ag, psName: name };
}

async function cleanup(ctx: Ctx): Promise<void> {
  await deleteArtifactGenerator(ctx.ref, kc);
  await deletePackageSource(ctx.psName, kc);
}

const updateEvent = (ag: ArtifactGenerator) => agResourceEvent(ag);

const resyncEvent = () => resyncPing({});

/** The PackageSource's conditions with the AG's name replaced, so that twins compare equal. */
function normalized(ps: PackageSource, ctx: Ctx): unknown {
  return (ps.status?.conditions ?? []).map((c) => ({
    ...c,
    message: (c.message ?? '')
      .split(ctx.ref.name)
      .join('<name>')
      .split(ctx.ref.namespace)
      .join('<ns>'),
  }));
}

async function check(ctx: Ctx): Promise<string[]> {
  const out: string[] = [];
  const ps = await getPackageSource(ctx.psName, kc);
  for (const c of ps.status?.conditions ?? []) {
    if (c.reason === REASON_FORCED) out.push('SourceWatcherRecoveryForced on the PackageSource');
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
}

const readFails = redelivered('nothing written; the redelivery surfaces the verdict');

/** One call's row: what differs between them, on top of this file's set-up, state and checks. */
const scenario = (
  call: string,
  row: Pick<MatrixScenario<Ctx>, 'write' | 'event' | 'target' | 'expect'>,
): MatrixScenario<Ctx> => ({
  call,
  redeliverAdvanceMs: 0,
  setup,
  state: async (ctx) => normalized(await getPackageSource(ctx.psName, kc), ctx),
  check,
  cleanup,
  // A verdict's Event that times out is owed (503, docs/adr/0061): on a loaded machine the cells
  // that fault another call give Events all the time they need.
  env: () => ({ ...OWNED_IN_NS, EVENT_WRITE_TIMEOUT_MS: '8000' }),
  ...row,
});

/**
 * The verdict's Event create in `namespace`: the verdict is written all the same; a transient
 * failure leaves the Event owed (docs/adr/0061): 503, and the redelivery writes it (this process
 * kept it; the redelivery here is another process, which finds the PackageSource in step). A 409 is
 * the Event found already there. Event writes give up after 1 s here (a 'slow' call is 250 ms).
 */
const eventCreate = (call: string, namespace: string): MatrixScenario<Ctx> => ({
  ...scenario(call, {
    write: true,
    event: (ctx) => updateEvent(ctx.ag),
    target: () => ({
      match: { group: 'events.k8s.io', resource: 'events', verb: 'create', namespace },
    }),
    expect: (f) =>
      f.label === '409'
        ? { status: 200, why: 'AlreadyExists: read, and its series bumped (or created again)' }
        : redelivered('the verdict is written; its Event is owed, and the redelivery writes it')(f),
  }),
  env: () => ({ ...OWNED_IN_NS, EVENT_WRITE_TIMEOUT_MS: '1000' }),
});

/** The file's matrix over `scenarios`, their cells run together or one at a time. */
const matrix = (concurrent: boolean, scenarios: readonly MatrixScenario<Ctx>[]) =>
  defineMatrix({
    env: () => ({ fn: 'surface-stalled', proxy: suite.proxy, t0: T0 }),
    table,
    concurrent,
    scenarios,
  });

describe('calls for one AG event', () => {
  matrix(true, [
    scenario('AG get (cached)', {
      write: false,
      event: (ctx) => updateEvent(ctx.ag),
      target: agGet(),
      expect: readFails,
    }),
    scenario('AG get (fresh, event newer than cache)', {
      write: false,
      // The event claims a newer resourceVersion than the cache serves: a fresh read follows.
      event: (ctx) =>
        updateEvent({
          ...ctx.ag,
          metadata: {
            ...ctx.ag.metadata,
            resourceVersion: String(BigInt(ctx.ag.metadata?.resourceVersion ?? '0') + 1000n),
          },
        }),
      target: agGet(2),
      expect: readFails,
    }),
    scenario('PS get (cached)', {
      write: false,
      event: (ctx) => updateEvent(ctx.ag),
      target: (ctx) => ({ match: { verb: 'get', resource: 'packagesources', name: ctx.psName } }),
      expect: readFails,
    }),
    scenario('PS status patch', {
      write: true,
      event: (ctx) => updateEvent(ctx.ag),
      target: (ctx) => ({
        match: {
          verb: 'patch',
          resource: 'packagesources',
          subresource: 'status',
          name: ctx.psName,
        },
      }),
      expect: conflictReread({
        before: 'precondition failed: re-read fresh and written',
        after: 'the write applied: the fresh re-read is in step',
        otherwise: 'transient: the redelivery writes or finds it in step',
      }),
    }),
    // Issue 15: the verdict's Event fails in every way; the verdict is written all the same.
    eventCreate('Event create (SourceWatcherStalled)', NS),
    // The verdict's Event regarding the PackageSource (cluster-scoped: in `default`).
    eventCreate('Event create on the PackageSource (default)', 'default'),
  ]);
});

// The resync sees every pair in the cluster: its cells run one at a time.
describe('calls of the resync', () => {
  matrix(false, [
    scenario('AG list (resync)', {
      write: false,
      event: resyncEvent,
      target: () => ({ match: { verb: 'list', resource: 'artifactgenerators' } }),
      expect: readFails,
    }),
    scenario('PS list (resync)', {
      write: false,
      event: resyncEvent,
      target: () => ({ match: { verb: 'list', resource: 'packagesources' } }),
      expect: readFails,
    }),
  ]);
});

describe('across every cell', () => {
  it('surface-stalled never wrote an ArtifactGenerator', () => {
    const agWrites = suite.proxy.calls.filter(
      (c) => c.resource === 'artifactgenerators' && !READ_VERBS.has(c.verb),
    );
    expect(suite.proxy.calls.length).toBeGreaterThan(0);
    expect(agWrites).toEqual([]);
  });

  it('ran every cell and every cell passed', () => {
    expect(table.counts()).toEqual({ run: 5 * 6 + 3 * 11, passed: 5 * 6 + 3 * 11 });
  });
});
