// Fault matrix for detect: every API call it makes (the read of the alarm's owner too) x {500,
// 429, 409, timeout, reset, slow} (the alarm writes also with the answer lost after they
// applied). detect writes only its follow-up alarm PingSource; its end state is that alarm plus
// the action events it emitted.

import { afterAll, describe, expect, it } from 'vitest';
import { APISERVER_REF_UPDATE } from '../../shared/core/index.js';
import {
  AG_API_VERSION,
  AG_KIND,
  type AgRef,
  type ArtifactGenerator,
} from '../../shared/core/objects/types.js';
import {
  agRefOf,
  deleteArtifactGenerator,
  makeArtifactGenerator,
  uniqueName,
} from '../support/apiserver.js';
import { createAgWithStatus, INVENTORY, DIGEST, stuckStatus } from '../support/ag-states.js';
import { agResourceEvent, cloudEvent, postEvent } from '../support/http-events.js';
import { waitForCachedAg } from './support/cache-wait.js';
import { agGet, conflictReread, MatrixTable, redelivered } from './support/fault-matrix.js';
import type { MatrixScenario } from './support/fault-matrix.js';
import { SettableClock, startFunction } from '../harness/functions.js';
import { READ_VERBS } from './support/fuzz-runner.js';
import { defineMatrix } from './support/matrix-suite.js';
import { functionFile } from './support/function-file.js';
import { resyncPing } from '../support/http-events.js';
import { deleteAlarm, readAlarm } from '../support/recovery-alarm.js';
import { progressing } from '../support/conditions.js';

// A sweep sees every AG in the cluster; an AG due later would move the alarm the sweep settles.
const { T0, NS, kc, suite } = functionFile('matrix-detect', 'rel-dt', 'ags');
const table = new MatrixTable('detect');
afterAll(async () => {
  console.log(table.render());
});

interface Ctx {
  readonly alarm: string;
  readonly subject: string;
  readonly ref: AgRef;
  readonly onServer: boolean;
  readonly data: ArtifactGenerator;
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
const ctxOf = (ref: AgRef, onServer: boolean, data: ArtifactGenerator): Ctx => ({
  alarm: uniqueName('alarm'),
  subject: `${ref.namespace}/${ref.name}`,
  ref,
  onServer,
  data,
});

async function stuckOnServer(): Promise<Ctx> {
  const ag = await createAgWithStatus(kc, stuckStatus(T0 - 60_000), { namespace: NS });
  await waitForCachedAg(agRefOf(ag), ag.metadata?.resourceVersion);
  return ctxOf(agRefOf(ag), true, ag);
}

function inGrace(): Ctx {
  const ref = { namespace: NS, name: uniqueName('grace') };
  // Due at T0 + 20 s: the alarm is armed for T0 + 21 s (whole seconds).
  return ctxOf(ref, false, graceAg(ref, T0, 10_000));
}

/** Arms the alarm fault-free, with its own clock and its own client tag. */
async function armAlarm(ctx: Ctx, at: number, sinceAgo: number): Promise<void> {
  const server = await startFunction({
    fn: 'detect',
    kubeConfig: suite.proxy.kubeConfig('setup-detect'),
    clock: new SettableClock(at),
    sinkUrl: suite.sink.url,
    env: { ALARM_NAME: ctx.alarm },
  });
  try {
    const answer = await postEvent(server.url, agUpdateEvent(graceAg(ctx.ref, at, sinceAgo)));
    if (answer.status !== 200) throw new Error(`arming the alarm answered ${answer.status}`);
  } finally {
    await server.close();
  }
}

const agUpdateEvent = (ag: ArtifactGenerator) => agResourceEvent(ag);

function refEvent(ref: AgRef) {
  return cloudEvent({
    type: APISERVER_REF_UPDATE,
    source: 'https://10.96.0.1:443',
    data: { kind: AG_KIND, apiVersion: AG_API_VERSION, ...ref },
    extensions: {
      kind: AG_KIND,
      apiversion: AG_API_VERSION,
      name: ref.name,
      namespace: ref.namespace,
    },
  });
}

const resyncEvent = () => resyncPing({});

async function state(ctx: Ctx): Promise<unknown> {
  const alarm = await readAlarm(kc, ctx.alarm);
  const emitted = [
    ...new Set(suite.sink.events.filter((e) => e.subject === ctx.subject).map((e) => e.type)),
  ].sort();
  return {
    emitted,
    alarm: alarm === null ? null : { dueInMs: alarm.moment === null ? null : alarm.moment - T0 },
  };
}

async function cleanup(ctx: Ctx): Promise<void> {
  if (ctx.onServer) await deleteArtifactGenerator(ctx.ref, kc);
  await deleteAlarm(kc, ctx.alarm);
}

const transient = redelivered('nothing decided or armed; the redelivery does it');

/** The alarm's read-modify-write retries on 409 (a lost create race or a stale precondition). */
const alarmWrite = conflictReread({
  before: 're-read and written again',
  after: 'the write applied: the re-read finds the alarm as wanted',
  otherwise:
    'a lost follow-up is redelivered (the resync is the safety net); a repeat emit is a harmless duplicate',
});

/** One call's row: what differs between them, on top of this file's state, env and clean-up. */
const scenario = (
  call: string,
  row: Pick<MatrixScenario<Ctx>, 'write' | 'setup' | 'event' | 'target' | 'expect'>,
): MatrixScenario<Ctx> => ({
  call,
  redeliverAdvanceMs: 0,
  env: (ctx) => ({ ALARM_NAME: ctx.alarm }),
  state,
  // detect's own invariant (it writes no AG or PackageSource) is checked across all cells below.
  check: () => Promise.resolve([]),
  cleanup,
  ...row,
});

defineMatrix({
  env: () => ({ fn: 'detect', proxy: suite.proxy, t0: T0, sinkUrl: suite.sink.url }),
  table,
  // Cells of one call run together: each has its own alarm, its own client tag and its own AG
  // (the sink is filtered by subject). A concurrent cell's AGs are stuck now or not on the server,
  // so they never give a sweep a future due time.
  concurrent: true,
  scenarios: [
    scenario('AG get (reference mode)', {
      write: false,
      setup: stuckOnServer,
      event: (ctx) => refEvent(ctx.ref),
      target: agGet(),
      expect: transient,
    }),
    scenario('AG list (sweep)', {
      write: false,
      setup: stuckOnServer,
      event: resyncEvent,
      target: () => ({ match: { verb: 'list', resource: 'artifactgenerators' } }),
      expect: transient,
    }),
    scenario('PingSource get (follow-up)', {
      write: false,
      setup: () => Promise.resolve(inGrace()),
      event: (ctx) => agUpdateEvent(ctx.data),
      target: (ctx) => ({ match: { verb: 'get', resource: 'pingsources', name: ctx.alarm } }),
      expect: (f) =>
        f.label === '409' ? { status: 200, why: 'a conflict is re-read' } : transient(f),
    }),
    scenario('PingSource create (follow-up)', {
      write: true,
      setup: () => Promise.resolve(inGrace()),
      event: (ctx) => agUpdateEvent(ctx.data),
      target: () => ({ match: { verb: 'create', resource: 'pingsources' } }),
      expect: alarmWrite,
    }),
    // The alarm's owner (docs/adr/0067): read before the create; any failure arms it without one.
    scenario('PingSource get (alarm owner)', {
      write: false,
      setup: () => Promise.resolve(inGrace()),
      event: (ctx) => agUpdateEvent(ctx.data),
      target: () => ({ match: { verb: 'get', resource: 'pingsources', name: 'resync' } }),
      expect: () => ({ status: 200, why: 'the alarm is armed without its owner, adopted later' }),
    }),
    scenario('PingSource patch (move earlier)', {
      write: true,
      setup: async () => {
        const ctx = inGrace();
        // Armed for T0 + 30 s first; the event (due T0 + 20 s) moves it earlier.
        await armAlarm(ctx, T0, 1_000);
        return ctx;
      },
      event: (ctx) => agUpdateEvent(ctx.data),
      target: (ctx) => ({ match: { verb: 'patch', resource: 'pingsources', name: ctx.alarm } }),
      expect: alarmWrite,
    }),
    scenario('PingSource delete (sweep, nothing due)', {
      write: true,
      setup: async () => {
        const ctx = inGrace();
        // Armed for about T0 - 54 s, a moment that has passed by T0: the sweep removes it.
        await armAlarm(ctx, T0 - 60_000, 25_000);
        return { ...ctx, subject: `${NS}/none` };
      },
      event: resyncEvent,
      target: (ctx) => ({ match: { verb: 'delete', resource: 'pingsources', name: ctx.alarm } }),
      expect: alarmWrite,
    }),
  ],
});

describe('across every cell', () => {
  it('detect wrote no ArtifactGenerator and no PackageSource', () => {
    const writes = suite.proxy.calls.filter(
      (c) => c.resource !== 'pingsources' && !READ_VERBS.has(c.verb),
    );
    expect(suite.proxy.calls.length).toBeGreaterThan(0);
    expect(writes).toEqual([]);
  });

  it('ran every cell and every cell passed', () => {
    expect(table.counts()).toEqual({ run: 4 * 6 + 3 * 11, passed: 4 * 6 + 3 * 11 });
  });
});
