// Fault matrix for force-drift: every API call it makes x {500, 429, 409, timeout, reset, slow},
// writes also with the answer lost after the write applied.

import { afterAll, describe, expect, it } from 'vitest';
import {
  ACTION_CLEAR_TRACKING,
  ACTION_FORCE,
  ANNOTATION_ATTEMPTS,
  ANNOTATION_REQUESTED_AT,
  readyOf,
  RESUME_SETTLE_MS,
} from '../../shared/core/index.js';
import type {
  AgRef,
  ArtifactGenerator,
  ArtifactGeneratorStatus,
} from '../../shared/core/objects/types.js';
import { agRefOf, getArtifactGenerator, deleteArtifactGenerator } from '../support/apiserver.js';
import { createAgWithStatus, healthyStatus, stuckStatus } from '../support/ag-states.js';
import {
  agViolations,
  attemptHistoryViolations,
  attemptsOf,
  recoveryProjection,
} from './support/ag-contract.js';
import { LogCapture } from '../harness/system/log-capture.js';
import { SettableClock, startFunction } from '../harness/functions.js';
import { actionEvent as detectAction, postEvent } from '../support/http-events.js';
import { createLogger } from '../../shared/runtime/logger.js';
import type { FaultCase } from './support/fault-cases.js';
import {
  conflictReread,
  MatrixTable,
  redelivered,
  type Expectation,
  type MatrixScenario,
  type Stage,
} from './support/fault-matrix.js';
import { defineMatrix } from './support/matrix-suite.js';
import { functionFile } from './support/function-file.js';
import { trackingAnnotations } from '../integration/functions/suite-kit.js';

const { T0, NS, kc, suite } = functionFile('matrix-force-drift', 'rel-fd', 'nothing');
const table = new MatrixTable('force-drift');
/** Past the resume settle time: a claim left without its marker or bump is finished then. */
const REDELIVER_AFTER_MS = RESUME_SETTLE_MS + 1000;
/**
 * The Event writes' own deadline in these cells (the product default is 2 s): above a 'slow'
 * call's 250 ms with room for a loaded machine, since a timed-out Event is now owed (503).
 */
const EVENT_DEADLINE_MS = 1000;
/** The Event deadline of the cells that fault another call. */
const UNHURRIED_EVENT_MS = 8000;

afterAll(() => console.log(table.render()));

interface Ctx {
  readonly ref: AgRef;
  readonly created: ArtifactGenerator;
  readonly clear: boolean;
  readonly history: ArtifactGenerator[];
}

/** Two forces, the last 100 s before T0. */
const TRACKED = trackingAnnotations(2, T0 - 100_000);

async function setup(kind: 'stuck' | 'healthy-tracked'): Promise<Ctx> {
  const status: ArtifactGeneratorStatus =
    kind === 'stuck' ? stuckStatus(T0 - 60_000) : healthyStatus(T0 - 10_000);
  const created = await createAgWithStatus(kc, status, {
    namespace: NS,
    ...(kind === 'healthy-tracked' ? { annotations: TRACKED } : {}),
  });
  return { ref: agRefOf(created), created, clear: kind === 'healthy-tracked', history: [] };
}

/** detect's action of `type` about `ag`, with the attempts the AG records, decided at T0. */
const actionEvent = (type: string, ag: ArtifactGenerator) =>
  detectAction(type, ag, attemptsOf(ag), T0);

async function check(ctx: Ctx, _stage: Stage): Promise<string[]> {
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
    if (ag.metadata?.annotations?.[ANNOTATION_REQUESTED_AT] !== TRACKED[ANNOTATION_REQUESTED_AT]) {
      out.push('requestedAt changed by a clear');
    }
  } else {
    out.push(...attemptHistoryViolations(ctx.history));
  }
  return out;
}

function scenario(
  call: string,
  opts: {
    kind: 'stuck' | 'healthy-tracked';
    write: boolean;
    match: (ctx: Ctx) => { verb: 'get' | 'patch'; subresource?: string };
    nth?: number;
    expect: (f: FaultCase) => Expectation;
  },
): MatrixScenario<Ctx> {
  return {
    call,
    write: opts.write,
    redeliverAdvanceMs: REDELIVER_AFTER_MS,
    // A step's Event that times out is owed (503, docs/adr/0061): on a loaded machine the other
    // cells' Events get all the time they need.
    env: () => ({ EVENT_WRITE_TIMEOUT_MS: String(UNHURRIED_EVENT_MS) }),
    setup: () => setup(opts.kind),
    event: (ctx) =>
      actionEvent(opts.kind === 'stuck' ? ACTION_FORCE : ACTION_CLEAR_TRACKING, ctx.created),
    target: (ctx) => ({
      match: { resource: 'artifactgenerators', name: ctx.ref.name, ...opts.match(ctx) },
      ...(opts.nth !== undefined ? { nth: opts.nth } : {}),
    }),
    state: async (ctx) =>
      recoveryProjection(await getArtifactGenerator(ctx.ref, kc), [T0, T0 + REDELIVER_AFTER_MS]),
    check,
    expect: opts.expect,
    cleanup: (ctx) => deleteArtifactGenerator(ctx.ref, kc),
  };
}

/**
 * An Event write (issue 15) fails in every way: the step is done before it is reported, so the end
 * state is the fault-free twin's. A transient failure leaves the Event owed (docs/adr/0061): 503,
 * and the redelivery (another process here) writes it; a 409 is the Event found already there.
 * Its own deadline is short here.
 */
function eventScenario(call: string, kind: 'stuck' | 'healthy-tracked'): MatrixScenario<Ctx> {
  const base = scenario(call, {
    kind,
    write: true,
    match: () => ({ verb: 'patch' }),
    expect: (f) =>
      f.label === '409'
        ? { status: 200, why: 'AlreadyExists: read, and its series bumped (or created again)' }
        : redelivered('the step is done; its Event is owed, and the redelivery writes it')(f),
  });
  return {
    ...base,
    env: () => ({ EVENT_WRITE_TIMEOUT_MS: String(EVENT_DEADLINE_MS) }),
    target: () => ({
      match: { group: 'events.k8s.io', resource: 'events', verb: 'create', namespace: NS },
    }),
  };
}

const conflictRedecided = (before: string, after: string, afterStatus: 200 | 503 = 200) =>
  conflictReread({
    before,
    after,
    afterStatus,
    otherwise: 'transient: the claim (or nothing) is in place; the redelivery finishes',
  });

defineMatrix({
  env: () => ({ fn: 'force-drift', proxy: suite.proxy, t0: T0 }),
  table,
  concurrent: true,
  scenarios: [
    scenario('AG get', {
      kind: 'stuck',
      write: false,
      match: () => ({ verb: 'get' }),
      expect: redelivered('nothing read, nothing written; the redelivery forces'),
    }),
    scenario('AG claim patch (annotations)', {
      kind: 'stuck',
      write: true,
      match: () => ({ verb: 'patch', subresource: '' }),
      nth: 1,
      expect: conflictRedecided(
        'precondition failed: re-read, re-decided, claimed again and forced',
        'the claim applied: the re-read sees the claim this event asked for, too young to resume (ADR 44): 503, and the redelivery finishes it',
        503,
      ),
    }),
    scenario('AG marker patch (status)', {
      kind: 'stuck',
      write: true,
      match: () => ({ verb: 'patch', subresource: 'status' }),
      expect: conflictRedecided(
        'the claim is still ours: re-read and the marker retried',
        'the marker applied: the re-read sees it and bumps',
      ),
    }),
    scenario('AG bump patch (requestedAt)', {
      kind: 'stuck',
      write: true,
      match: () => ({ verb: 'patch', subresource: '' }),
      nth: 2,
      expect: redelivered('claim and marker in place; the settle-time resume bumps'),
    }),
    scenario('AG clear patch (tracking)', {
      kind: 'healthy-tracked',
      write: true,
      match: () => ({ verb: 'patch', subresource: '' }),
      nth: 1,
      expect: conflictRedecided(
        'precondition failed: re-read, still healthy, cleared again',
        'the clear applied: the re-read finds nothing to do',
      ),
    }),
    eventScenario('Event create (SourceWatcherRecoveryForced)', 'stuck'),
    eventScenario('Event create (SourceWatcherRecovered)', 'healthy-tracked'),
  ],
});

describe('Event writes failing: the force is unchanged, one warn line per request', () => {
  it.each([
    [403, 200, 'forced', false],
    [500, 503, 'event-owed', true],
  ])('every Event call answered %i: %i %s (owed: %s)', async (status, code, result, owed) => {
    const ctx = await setup('stuck');
    const logs = new LogCapture();
    const tag = `events-${status}-${ctx.ref.name}`;
    const fault = suite.proxy.addFault({
      match: { group: 'events.k8s.io', resource: 'events', clientTag: tag },
      kind: 'status',
      status,
      times: 100,
    });
    const server = await startFunction({
      fn: 'force-drift',
      kubeConfig: suite.proxy.kubeConfig(tag),
      clock: new SettableClock(T0),
      logger: createLogger({ name: 'force-drift', level: 'info', destination: logs }),
    });
    try {
      const answer = await postEvent(server.url, actionEvent(ACTION_FORCE, ctx.created));
      expect(answer).toMatchObject({ status: code, body: { result } });
    } finally {
      fault.remove();
      await server.close();
    }
    expect(fault.applied).toBeGreaterThanOrEqual(1);
    const ag = await getArtifactGenerator(ctx.ref, kc);
    expect(attemptsOf(ag)).toBe(1);
    expect(readyOf(ag)?.reason).toBe('SourceWatcherRecoveryForced');
    const warnings = logs.records.filter((l) => l.msg === 'could not write Kubernetes Event');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 'warn', statusCode: status, owed });
    await deleteArtifactGenerator(ctx.ref, kc);
  });
});

describe('the matrix', () => {
  it('ran every cell and every cell passed', () => {
    expect(table.counts()).toEqual({ run: 6 + 6 * 11, passed: 6 + 6 * 11 });
  });
});
