// The fault matrix: for every function, every API call it makes (a row) x {500, 429, 409, timeout,
// reset, slow} (the columns; writes also with the answer lost after they applied). Each cell
// delivers the event with the fault injected, checks the answer and the contract, lifts the fault,
// redelivers and compares the end state with a fault-free twin (support/fault-matrix.ts). A
// function's row of this table names what differs: its fixtures (support/matrix-fixtures/), its
// calls with the answer each fault must get and why, the writes it must never make, its cell count.

import { describe, expect, it } from 'vitest';
import { ACTION_FORCE, readyOf } from '../../shared/core/index.js';
import { createLogger } from '../../shared/runtime/logger.js';
import { deleteArtifactGenerator, getArtifactGenerator } from '../support/apiserver.js';
import { postEvent, resyncPing } from '../support/http-events.js';
import { LogCapture } from '../harness/system/log-capture.js';
import { SettableClock, startFunction } from '../harness/functions.js';
import { attemptsOf } from './support/ag-contract.js';
import { eventCreateRow } from './support/event-write-cells.js';
import {
  agGet,
  conflictReread,
  listOf,
  readAgainInPlace,
  redelivered,
} from './support/fault-matrix.js';
import type { FunctionFile } from './support/function-file.js';
import { defineFaultMatrix, functionMatrix } from './support/matrix-suite.js';
import { detectFixtures } from './support/matrix-fixtures/detect.js';
import {
  detectActionAbout,
  forceDriftFixtures,
  type ForceDriftFixtures,
} from './support/matrix-fixtures/force-drift.js';
import { surfaceStalledFixtures } from './support/matrix-fixtures/surface-stalled.js';

const resyncEvent = () => resyncPing({});

// detect: nothing decided or armed when a read fails.
const detectTransient = redelivered('nothing decided or armed; the redelivery does it');

/** The alarm's read-modify-write retries on 409 (a lost create race or a stale precondition). */
const alarmWrite = conflictReread({
  repeatable: true,
  before: 're-read and written again',
  after: 'the write applied: the re-read finds the alarm as wanted',
  otherwise:
    'a lost follow-up is redelivered (the resync is the safety net); a repeat emit is a harmless duplicate',
});

/** force-drift: a 409 is re-read and re-decided; anything else is finished by the redelivery. */
const conflictRedecided = (before: string, after: string, afterStatus: 200 | 503 = 200) =>
  conflictReread({
    // Every force-drift write but the bump carries its precondition (ADR 71).
    repeatable: true,
    before,
    after,
    afterStatus,
    otherwise: 'transient: the claim (or nothing) is in place; the redelivery finishes',
  });

/** surface-stalled: a failed read leaves nothing written. */
const surfaceReadFails = redelivered('nothing written; the redelivery surfaces the verdict');

/** force-drift beyond one call: every Event call fails; the force is unchanged. */
function eventWritesFailing(f: ForceDriftFixtures, { T0, kc, suite }: FunctionFile): void {
  describe('Event writes failing: the force is unchanged, one warn line per request', () => {
    it.each([
      [403, 200, 'forced', false],
      [500, 503, 'event-owed', true],
    ])('every Event call answered %i: %i %s (owed: %s)', async (status, code, result, owed) => {
      const ctx = await f.stuck();
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
        const answer = await postEvent(
          server.url,
          detectActionAbout(ACTION_FORCE, ctx.created, T0),
        );
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
}

defineFaultMatrix([
  // detect writes only its follow-up alarm PingSource; the read of the alarm's owner is a row too.
  // Each cell has its own alarm, client tag and AG (the sink is filtered by subject); a cell's AGs
  // are stuck now or not on the server, so they never give a concurrent sweep a future due time.
  functionMatrix({
    fn: 'detect',
    nsPrefix: 'rel-dt',
    // A sweep sees every AG in the cluster; an AG due later would move the alarm the sweep settles.
    emptied: 'ags',
    sink: true,
    fixtures: detectFixtures,
    calls: (f) => [
      {
        call: 'AG get (reference mode)',
        write: false,
        setup: f.stuckOnServer,
        event: f.refEvent,
        target: agGet(),
        expect: detectTransient,
      },
      {
        call: 'AG list (sweep)',
        write: false,
        setup: f.stuckOnServer,
        event: resyncEvent,
        target: listOf('artifactgenerators'),
        expect: detectTransient,
      },
      {
        call: 'PingSource get (follow-up)',
        write: false,
        setup: f.inGrace,
        target: (ctx) => ({ match: { verb: 'get', resource: 'pingsources', name: ctx.alarm } }),
        // After the AG's history read: a transient failure is read again in place.
        expect: readAgainInPlace((fault) =>
          fault.label === '409'
            ? { status: 200, why: 'a conflict is re-read' }
            : detectTransient(fault),
        ),
      },
      {
        call: 'PingSource create (follow-up)',
        write: true,
        setup: f.inGrace,
        target: () => ({ match: { verb: 'create', resource: 'pingsources' } }),
        expect: alarmWrite,
      },
      // The alarm's owner (docs/adr/0067): read before the create; any failure arms it without one.
      {
        call: 'PingSource get (alarm owner)',
        write: false,
        setup: f.inGrace,
        target: () => ({ match: { verb: 'get', resource: 'pingsources', name: 'resync' } }),
        expect: () => ({ status: 200, why: 'the alarm is armed without its owner, adopted later' }),
      },
      {
        call: 'PingSource patch (move earlier)',
        write: true,
        setup: f.inGraceAlarmLater,
        target: (ctx) => ({ match: { verb: 'patch', resource: 'pingsources', name: ctx.alarm } }),
        expect: alarmWrite,
      },
      {
        call: 'PingSource delete (sweep, nothing due)',
        write: true,
        setup: f.alarmPassed,
        event: resyncEvent,
        target: (ctx) => ({ match: { verb: 'delete', resource: 'pingsources', name: ctx.alarm } }),
        expect: alarmWrite,
      },
    ],
    neverWrites: {
      what: 'ArtifactGenerator and no PackageSource',
      is: (call) => call.resource !== 'pingsources',
    },
    cells: 4 * 6 + 3 * 11,
  }),

  // force-drift: the AG's claim, marker, bump and clear patches, and the Events of its steps.
  functionMatrix({
    fn: 'force-drift',
    nsPrefix: 'rel-fd',
    emptied: 'nothing',
    sink: false,
    fixtures: forceDriftFixtures,
    calls: (f, { NS }) => [
      {
        call: 'AG get',
        write: false,
        setup: f.stuck,
        target: f.agCall('get'),
        expect: redelivered('nothing read, nothing written; the redelivery forces'),
      },
      {
        call: 'AG claim patch (annotations)',
        write: true,
        setup: f.stuck,
        target: f.agCall('patch', { subresource: '', nth: 1 }),
        expect: conflictRedecided(
          'precondition failed: re-read, re-decided, claimed again and forced',
          'the claim applied: the re-read sees the claim this event asked for, too young to resume (ADR 44): 503, and the redelivery finishes it',
          503,
        ),
      },
      {
        call: 'AG marker patch (status)',
        write: true,
        setup: f.stuck,
        target: f.agCall('patch', { subresource: 'status' }),
        expect: conflictRedecided(
          'the claim is still ours: re-read and the marker retried',
          'the marker applied: the re-read sees it and bumps',
        ),
      },
      {
        call: 'AG bump patch (requestedAt)',
        write: true,
        setup: f.stuck,
        target: f.agCall('patch', { subresource: '', nth: 2 }),
        expect: redelivered('claim and marker in place; the settle-time resume bumps'),
      },
      {
        call: 'AG clear patch (tracking)',
        write: true,
        setup: f.healthyTracked,
        target: f.agCall('patch', { subresource: '', nth: 1 }),
        expect: conflictRedecided(
          'precondition failed: re-read, still healthy, cleared again',
          'the clear applied: the re-read finds nothing to do',
        ),
      },
      // The Event of each step, in the AG's namespace.
      eventCreateRow('Event create (SourceWatcherRecoveryForced)', NS, 'the step is done', {
        setup: f.stuck,
      }),
      eventCreateRow('Event create (SourceWatcherRecovered)', NS, 'the step is done', {
        setup: f.healthyTracked,
      }),
    ],
    // Across every cell (new with the table): its only writes are to the AGs and their Events.
    neverWrites: {
      what: 'object but ArtifactGenerators and Events',
      is: (call) => call.resource !== 'artifactgenerators' && call.resource !== 'events',
    },
    cells: 6 + 6 * 11,
    more: eventWritesFailing,
  }),

  // surface-stalled: the AG has given up, so the fault-free end state is
  // Ready=False/SourceWatcherStalled on its PackageSource; only that status write is a write.
  functionMatrix({
    fn: 'surface-stalled',
    nsPrefix: 'rel-ss',
    // The resync lists every AG and PackageSource: keep the cluster to this function's objects.
    emptied: 'ags-and-packagesources',
    sink: false,
    fixtures: surfaceStalledFixtures,
    calls: (f, { NS }) => [
      // Calls for one AG event: their cells run together. The AG reads come after the
      // PackageSource's: a transient failure is read again in place.
      {
        call: 'AG get (cached)',
        write: false,
        target: agGet(),
        expect: readAgainInPlace(surfaceReadFails),
      },
      {
        call: 'AG get (fresh, event newer than cache)',
        write: false,
        event: f.newerThanCache,
        target: agGet(2),
        expect: readAgainInPlace(surfaceReadFails),
      },
      {
        call: 'PS get (cached)',
        write: false,
        target: (ctx) => ({ match: { verb: 'get', resource: 'packagesources', name: ctx.psName } }),
        expect: surfaceReadFails,
      },
      {
        call: 'PS status patch',
        write: true,
        target: (ctx) => ({
          match: {
            verb: 'patch',
            resource: 'packagesources',
            subresource: 'status',
            name: ctx.psName,
          },
        }),
        expect: conflictReread({
          repeatable: true,
          before: 'precondition failed: re-read fresh and written',
          after: 'the write applied: the fresh re-read is in step',
          otherwise: 'transient: the redelivery writes or finds it in step',
        }),
      },
      // Issue 15: the verdict's Event fails in every way; the verdict is written all the same (this
      // process kept the owed Event; the redelivery here is another process, which finds the
      // PackageSource in step).
      eventCreateRow('Event create (SourceWatcherStalled)', NS, 'the verdict is written'),
      // The verdict's Event regarding the PackageSource (cluster-scoped: in `default`).
      eventCreateRow(
        'Event create on the PackageSource (default)',
        'default',
        'the verdict is written',
      ),
      // Calls of the resync: it sees every pair in the cluster, so its cells run one at a time.
      {
        call: 'AG list (resync)',
        write: false,
        event: resyncEvent,
        target: listOf('artifactgenerators'),
        // After the PackageSource list.
        expect: readAgainInPlace(surfaceReadFails),
        oneAtATime: true,
      },
      {
        call: 'PS list (resync)',
        write: false,
        event: resyncEvent,
        target: listOf('packagesources'),
        expect: surfaceReadFails,
        oneAtATime: true,
      },
    ],
    neverWrites: {
      what: 'ArtifactGenerator',
      is: (call) => call.resource === 'artifactgenerators',
    },
    cells: 5 * 6 + 3 * 11,
  }),
]);
