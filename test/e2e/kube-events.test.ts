// End-to-end: the Kubernetes Events an operator reads with `kubectl describe artifactgenerator`
// (issue 15), listed on the real API server after whole recovery cycles. Each scenario prints the
// Events section as kubectl describe would (docs/operations.md's "Events" excerpts come from here).

import { describe, expect, it } from 'vitest';
import { REPORTING_CONTROLLER } from '../../shared/core/index.js';
import { getArtifactGenerator } from '../support/apiserver.js';
import { describeEvents, listEventsAbout, occurrences } from '../support/kube-events.js';
import type { LossRule } from '../harness/source-watcher-sim/index.js';
import type { AgProgress } from '../harness/system/progress.js';
import {
  MINUTE,
  createPair,
  kc,
  readPackageSource,
  report,
  startObserveSystem,
  startSystem,
  type Pair,
  type System,
} from './scenario-kit.js';

async function eventsOf(pair: Pair) {
  const ag = await getArtifactGenerator(pair.ref, kc);
  const uid = ag.metadata?.uid;
  expect(uid).toBeDefined();
  return listEventsAbout(kc, pair.ref.namespace, { uid: uid ?? '', name: pair.name });
}

/** "Reason/Action [attempt N/M] xCount", sorted: what the operator sees, minus the ages. */
function summary(events: Events): string[] {
  return events
    .map((e) => {
      const attempt = /^attempt (\d+\/\d+)/.exec(e.note)?.[1];
      return `${e.reason}/${e.action}${attempt !== undefined ? ` ${attempt}` : ''} x${occurrences(e)}`;
    })
    .sort();
}

type Events = Awaited<ReturnType<typeof eventsOf>>;

function printDescribe(title: string, system: System, events: Events) {
  console.log(`[describe] ${title}\n${describeEvents(events, system.clock.now())}`);
}

/** `kubectl describe artifactgenerator` of the pair's AG, printed. */
function printAgDescribe(system: System, pair: Pair, events: Events) {
  printDescribe(
    `kubectl -n ${pair.ref.namespace} describe artifactgenerator ${pair.name}`,
    system,
    events,
  );
}

/**
 * One pair losing its Ready writes as `lose` says, run until its progress shows `until`, then
 * `thenMs` more: the system, the pair and its AG's Events.
 */
async function eventsAfter(
  lose: LossRule,
  prefix: string,
  until: { what: string; maxVirtualMs: number; done: (p: AgProgress) => boolean },
  thenMs: number,
): Promise<{ system: System; pair: Pair; events: Events }> {
  const system = await startSystem();
  const pair = await createPair(system, { lose, prefix });
  await system.runUntil(() => until.done(system.progress.of(pair.key)), {
    maxVirtualMs: until.maxVirtualMs,
    what: until.what,
  });
  await system.advance(thenMs);
  return { system, pair, events: await eventsOf(pair) };
}

describe('e2e: Kubernetes Events of the recovery', () => {
  it('a Ready write lost once: forced, then recovered — two Events on the AG', async () => {
    // Recovered, then a resync later (5 minutes): nothing more is reported.
    const { system, pair, events } = await eventsAfter(
      { times: 1 },
      'ev-once',
      { what: 'recovery', maxVirtualMs: 3 * MINUTE, done: (p) => p.recoveries.length > 0 },
      5 * MINUTE,
    );
    expect(summary(events)).toEqual([
      'SourceWatcherRecovered/ClearTracking x1',
      'SourceWatcherRecoveryForced/Force 1/5 x1',
    ]);
    for (const e of events) {
      expect(e.type).toBe('Normal');
      expect(e.reportingController).toBe(REPORTING_CONTROLLER);
      expect(e.reportingInstance).toBe('force-drift-0');
    }
    printAgDescribe(system, pair, events);
    report('events: lost once', { events: events.length });
  });

  it('a Ready write lost always: five forces, then SourceWatcherStalled (Warning) on the AG and on its PackageSource', async () => {
    const { system, pair, events } = await eventsAfter(
      {},
      'ev-always',
      {
        what: 'SourceWatcherStalled',
        maxVirtualMs: 14 * MINUTE,
        done: (p) => p.stalledAt !== null,
      },
      6 * MINUTE,
    );
    expect(summary(events)).toEqual([
      'SourceWatcherRecoveryForced/Force 1/5 x1',
      'SourceWatcherRecoveryForced/Force 2/5 x1',
      'SourceWatcherRecoveryForced/Force 3/5 x1',
      'SourceWatcherRecoveryForced/Force 4/5 x1',
      'SourceWatcherRecoveryForced/Force 5/5 x1',
      'SourceWatcherStalled/GiveUp x1',
    ]);
    const verdict = events.find((e) => e.reason === 'SourceWatcherStalled');
    expect(verdict).toMatchObject({
      type: 'Warning',
      reportingInstance: 'surface-stalled-0',
      related: { kind: 'PackageSource', name: pair.packageSource },
    });
    expect(verdict?.note).toContain('fluxcd/pkg#934');
    expect(verdict?.note).toContain('Runbook "SourceWatcherStalled"');
    printAgDescribe(system, pair, events);

    // The PackageSource is cluster-scoped: its Events live in `default`, where
    // `kubectl describe packagesource` finds them (by uid).
    const psName = pair.packageSource ?? '';
    const ps = await readPackageSource(psName);
    const psUid = (ps as { metadata?: { uid?: string } }).metadata?.uid;
    expect(psUid).toBeDefined();
    const psEvents = await listEventsAbout(kc, 'default', {
      uid: psUid ?? '',
      name: psName,
    });
    expect(psEvents.map((e) => `${e.type} ${e.reason}/${e.action} x${occurrences(e)}`)).toEqual([
      'Warning SourceWatcherStalled/GiveUp x1',
    ]);
    const agUid = (await getArtifactGenerator(pair.ref, kc)).metadata?.uid;
    expect(psEvents[0]).toMatchObject({
      reportingController: REPORTING_CONTROLLER,
      reportingInstance: 'surface-stalled-0',
      regarding: { kind: 'PackageSource', name: psName, uid: psUid },
      related: {
        kind: 'ArtifactGenerator',
        namespace: pair.ref.namespace,
        name: pair.name,
        uid: agUid,
      },
    });
    expect(psEvents[0]?.regarding.namespace).toBeUndefined();
    expect(psEvents[0]?.note).toContain(`ArtifactGenerator ${pair.ref.namespace}/${pair.name}`);
    expect(psEvents[0]?.note).toContain('fluxcd/pkg#934');
    expect(psEvents[0]?.note).toContain('Runbook "SourceWatcherStalled"');
    printDescribe(`kubectl describe packagesource ${psName}`, system, psEvents);
    report('events: lost always', {
      events: events.length,
      packageSourceEvents: psEvents.length,
    });
  });

  it('observe mode (observe overlay RBAC enforced): one would-force Event, its repeats in the series', async () => {
    const system = await startObserveSystem();
    const pair = await createPair(system, { lose: {}, prefix: 'ev-observe' });
    await system.advance(12 * MINUTE);

    const denied = system.proxy.calls.filter((c) => c.fault !== undefined);
    expect(denied.map((c) => `${c.clientTag} ${c.verb} ${c.path}`)).toEqual([]);
    const events = await eventsOf(pair);
    expect(events.map((e) => `${e.type} ${e.reason}/${e.action}`)).toEqual([
      'Normal SourceWatcherRecoveryWouldForce/ObserveForce',
    ]);
    const e = events[0];
    expect(e?.note).toMatch(/^observe mode: would force attempt 1\/5/);
    // detect asks again at every follow-up and resync while the AG stays stuck: one object.
    expect(occurrences(e!)).toBeGreaterThanOrEqual(2);
    expect(
      system.writesBy(['force-drift', 'surface-stalled'], { resource: 'artifactgenerators' }),
    ).toEqual([]);
    printAgDescribe(system, pair, events);
    report('events: observe', { occurrences: occurrences(e!) });
  });
});
