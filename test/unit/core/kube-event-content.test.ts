// The Event of each recovery step: reason, type, action, note and name (docs/adr/0033).

import { describe, expect, it } from 'vitest';
import {
  buildEvent,
  buildEvents,
  buildPackageSourceEvent,
  capNote,
  CLUSTER_SCOPED_EVENTS_NAMESPACE,
  eventName,
  formatTimeMicro,
  formatTimeNano,
  isDns1123Subdomain,
  NOTE_MAX_BYTES,
  packageSourceStepContent,
  REPORTING_CONTROLLER,
  stalledStep,
  stepContent,
  type GateReason,
  type EventStep,
  type EventSubject,
  type StalledStep,
} from '../../../shared/core/index.js';
import { CFG, STALL } from './fixtures.js';

const AG: EventSubject = { namespace: 'cozy-system', name: 'pkg-01', uid: 'uid-1' };
const T = STALL + 1234;
/** The Event's references to the AG and to its PackageSource. */
const AG_REF = {
  apiVersion: 'source.extensions.fluxcd.io/v1beta1',
  kind: 'ArtifactGenerator',
  namespace: 'cozy-system',
  name: 'pkg-01',
  uid: 'uid-1',
};
/** What every Event that pod-a reports at T holds, in the given namespace. */
const eventByPodA = (namespace: string) => ({
  apiVersion: 'events.k8s.io/v1',
  kind: 'Event',
  metadata: { namespace },
  reportingController: REPORTING_CONTROLLER,
  reportingInstance: 'pod-a',
  eventTime: '2026-11-29T16:30:01.234000Z',
});
/** The first of five forces, and the verdict without and with its PackageSource's uid. */
const FORCE_1: EventStep = { kind: 'forced', attempt: 1, maxAttempts: 5, claimAt: T };
const VERDICT_NO_UID: StalledStep = {
  kind: 'stalled',
  attempts: 5,
  claimAt: T,
  packageSource: 'pkg-01',
};
const VERDICT: StalledStep = { ...VERDICT_NO_UID, packageSourceUid: 'ps-uid-1' };
const PS_REF = { apiVersion: 'cozystack.io/v1alpha1', kind: 'PackageSource', name: 'pkg-01' };

describe('stepContent', () => {
  it.each<[string, EventStep, string, string, 'Normal' | 'Warning', RegExp]>([
    [
      'force',
      { kind: 'forced', attempt: 2, maxAttempts: 5, claimAt: T },
      'SourceWatcherRecoveryForced',
      'Force',
      'Normal',
      /^attempt 2\/5: /,
    ],
    [
      'resumed force',
      { kind: 'resumed', attempt: 3, maxAttempts: 5, claimAt: T },
      'SourceWatcherRecoveryForced',
      'ResumeForce',
      'Normal',
      /^attempt 3\/5 resumed: /,
    ],
    [
      'recovery',
      {
        kind: 'recovered',
        attempts: 1,
        claimAt: T,
        readyStatus: 'True',
        readyReason: 'Succeeded',
      },
      'SourceWatcherRecovered',
      'ClearTracking',
      'Normal',
      /Ready=True\/Succeeded after 1 forced rebuild\(s\); recovery tracking cleared/,
    ],
    [
      'give-up',
      VERDICT_NO_UID,
      'SourceWatcherStalled',
      'GiveUp',
      'Warning',
      /fluxcd\/pkg#934.*Runbook "SourceWatcherStalled": restart source-watcher/,
    ],
    [
      "observe's would-force",
      { kind: 'would-force', attempt: 1, maxAttempts: 5, stallAt: STALL },
      'SourceWatcherRecoveryWouldForce',
      'ObserveForce',
      'Normal',
      /^observe mode: would force attempt 1\/5 .*nothing was written$/,
    ],
  ])('%s', (_, step, reason, action, type, note) => {
    const c = stepContent(step, AG);
    expect(c).toMatchObject({ reason, action, type });
    expect(c.note).toMatch(note);
    expect(Buffer.byteLength(c.note)).toBeLessThanOrEqual(NOTE_MAX_BYTES);
  });
});

describe('a force says how its stall was found (degraded early detection shows without logs)', () => {
  const SUBJECT_ = { namespace: 'cozy-system', name: 'pkg-01', uid: 'u1' };
  it.each<[string, GateReason | undefined, RegExp]>([
    [
      'the lost-write signal',
      'lost-write',
      /; found early: its outputs moved while Ready stayed Unknown$/,
    ],
    [
      'the time rule',
      'stuck',
      /; found by the time rule .*early detection did not see the lost write/,
    ],
    [
      'a rebuild after a force',
      'rebuilding',
      /; source-watcher's rebuild after the last force has not written Ready$/,
    ],
    ['our marker', 'own-marker', /; the last force's marker is still in place$/],
    ['no gate given', undefined, /fluxcd\/pkg#934\)$/],
  ])('%s', (_label, gate, note) => {
    const step: EventStep = gate !== undefined ? { ...FORCE_1, gate } : FORCE_1;
    const content = stepContent(step, SUBJECT_);
    expect(content.note).toMatch(/^attempt 1\/5: /);
    expect(content.note).toMatch(note);
    expect(Buffer.byteLength(content.note)).toBeLessThanOrEqual(NOTE_MAX_BYTES);
  });
});

describe('buildEvent', () => {
  it('regards the AG (uid included), names the controller and instance, eventTime in µs', () => {
    const e = buildEvent(FORCE_1, AG, 'pod-a', T);
    expect(e).toMatchObject({
      ...eventByPodA('cozy-system'),
      regarding: AG_REF,
    });
    expect(e.related).toBeUndefined();
    expect(e.series).toBeUndefined();
    expect(isDns1123Subdomain(e.metadata.name)).toBe(true);
  });

  it.each<[string, { packageSourceUid?: string }, object]>([
    [
      'the verdict names the PackageSource (uid when known) as the related object',
      { packageSourceUid: 'ps-1' },
      { ...PS_REF, uid: 'ps-1' },
    ],
    ['the verdict without the PackageSource uid still names it as the related object', {}, PS_REF],
  ])('%s', (_name, uid, related) => {
    const e = buildEvent({ ...VERDICT_NO_UID, ...uid }, AG, 'pod-a', T);
    expect(e.related).toEqual(related);
    expect(e.type).toBe('Warning');
  });

  it('the name does not depend on the replica or the moment it is reported', () => {
    const a = buildEvent(FORCE_1, AG, 'pod-a', T);
    const b = buildEvent(FORCE_1, AG, 'pod-b', T + 5000);
    expect(a.metadata.name).toBe(b.metadata.name);
  });

  it('reportingInstance is cut to 128 characters', () => {
    const e = buildEvent(FORCE_1, AG, 'p'.repeat(300), T);
    expect(e.reportingInstance).toHaveLength(128);
  });
});

describe('the verdict on the PackageSource', () => {
  it.each<[string, string, RegExp]>([
    ['names the AG', 'ArtifactGenerator cozy-system/pkg-01 after 5 forced', /./],
    ['names the issue', 'fluxcd/pkg#934', /./],
    ['names the runbook step', 'Runbook "SourceWatcherStalled": restart source-watcher', /./],
    [
      'says what the PackageSource shows',
      'this PackageSource is Ready=False/SourceWatcherStalled',
      /./,
    ],
    [
      'says how to retry',
      'remove its tracking annotations to retry',
      /tracking annotations to retry$/,
    ],
  ])('the note %s', (_, words, end) => {
    const c = packageSourceStepContent(VERDICT, AG);
    expect(c.note).toContain(words);
    expect(c.note).toMatch(end);
    expect(Buffer.byteLength(c.note)).toBeLessThanOrEqual(NOTE_MAX_BYTES);
  });

  it('same reason, action, type and stamp as the AG verdict', () => {
    const ps = packageSourceStepContent(VERDICT, AG);
    const ag = stepContent(VERDICT, AG);
    expect({ ...ps, note: '' }).toEqual({ ...ag, note: '' });
    expect(ps).toMatchObject({ reason: 'SourceWatcherStalled', action: 'GiveUp', type: 'Warning' });
  });

  it('regards the PackageSource (no namespace) in `default`, the AG related', () => {
    const e = buildPackageSourceEvent(VERDICT, AG, 'pod-a', T);
    expect(CLUSTER_SCOPED_EVENTS_NAMESPACE).toBe('default');
    expect(e).toMatchObject({
      ...eventByPodA('default'),
      reason: 'SourceWatcherStalled',
      action: 'GiveUp',
      type: 'Warning',
    });
    expect(e?.regarding).toEqual({ ...PS_REF, uid: 'ps-uid-1' });
    expect(e?.related).toEqual(AG_REF);
    expect(e?.series).toBeUndefined();
  });

  it('is named after the PackageSource and a hash of (its uid, reason, action, stamp)', () => {
    const e = buildPackageSourceEvent(VERDICT, AG, 'pod-a', T);
    expect(e?.metadata.name).toBe(
      eventName(
        { name: 'pkg-01', uid: 'ps-uid-1' },
        'SourceWatcherStalled',
        'GiveUp',
        formatTimeNano(T),
      ),
    );
    expect(e?.metadata.name).toMatch(/^pkg-01\.[0-9a-f]{16}$/);
    // Not the AG's Event name, though AG and PackageSource share the name here.
    expect(e?.metadata.name).not.toBe(buildEvent(VERDICT, AG, 'pod-a', T).metadata.name);
    // Another replica, later: the same name.
    expect(buildPackageSourceEvent(VERDICT, AG, 'pod-b', T + 9000)?.metadata.name).toBe(
      e?.metadata.name,
    );
  });

  it.each<[string, StalledStep]>([
    [
      'a 253-character PackageSource name',
      { ...VERDICT, packageSource: `${'a'.repeat(240)}.${'b'.repeat(12)}` },
    ],
    [
      'a name cut right after a dot',
      { ...VERDICT, packageSource: `${'a'.repeat(235)}.bcdefghijklmnopq` },
    ],
  ])('has a valid Event name for %s', (_, step) => {
    const name = buildPackageSourceEvent(step, AG, 'pod-a', T)?.metadata.name ?? '';
    expect(isDns1123Subdomain(name)).toBe(true);
    expect(name.length).toBeLessThanOrEqual(253);
  });

  it.each<[string, StalledStep]>([
    ['no PackageSource', { ...VERDICT, packageSource: null, packageSourceUid: null }],
    ['no uid', VERDICT_NO_UID],
    ['an empty uid', { ...VERDICT, packageSourceUid: '' }],
    ['a uid over 128 characters', { ...VERDICT, packageSourceUid: 'u'.repeat(129) }],
    ['a malformed name', { ...VERDICT, packageSource: 'Not_A_Name' }],
  ])('is not written with %s', (_, step) => {
    expect(buildPackageSourceEvent(step, AG, 'pod-a', T)).toBeNull();
    expect(buildEvents(step, AG, 'pod-a', T)).toHaveLength(1);
  });

  it.each<[string, EventStep, string[]]>([
    ['a force', FORCE_1, ['cozy-system']],
    ['the verdict with its PackageSource', VERDICT, ['cozy-system', 'default']],
  ])('buildEvents for %s: the namespaces of its Events', (_, step, namespaces) => {
    expect(buildEvents(step, AG, 'pod-a', T).map((e) => e.metadata.namespace)).toEqual(namespaces);
  });

  it('stalledStep takes the name and uid from the PackageSource read from the server', () => {
    const ag = { metadata: { name: 'pkg-01', namespace: 'cozy-system' } };
    expect(
      stalledStep(ag, { metadata: { name: 'pkg-01', uid: 'ps-uid-1' } }, T, CFG),
    ).toMatchObject({ kind: 'stalled', packageSource: 'pkg-01', packageSourceUid: 'ps-uid-1' });
    expect(stalledStep(ag, null, T, CFG)).toMatchObject({ packageSource: null });
  });
});

describe('eventName', () => {
  it.each<[string, EventSubject]>([
    ['a short name', AG],
    ['a 253-character name', { ...AG, name: `${'a'.repeat(240)}.${'b'.repeat(12)}` }],
    ['a name cut right after a dot', { ...AG, name: `${'a'.repeat(235)}.bcdefghijklmnopq` }],
  ])('is a valid Event name for %s', (_, subject) => {
    const name = eventName(subject, 'R', 'A', 's');
    expect(isDns1123Subdomain(name)).toBe(true);
    expect(name.length).toBeLessThanOrEqual(253);
  });

  it.each([
    ['uid', { ...AG, uid: 'uid-2' }, 'R', 'A', 's'],
    ['reason', AG, 'R2', 'A', 's'],
    ['action', AG, 'R', 'A2', 's'],
    ['stamp', AG, 'R', 'A', 's2'],
  ] as const)('differs when the %s differs', (_, subject, reason, action, stamp) => {
    expect(eventName(subject, reason, action, stamp)).not.toBe(eventName(AG, 'R', 'A', 's'));
  });
});

describe('capNote and formatTimeMicro', () => {
  it('cuts at 1024 bytes on a character boundary', () => {
    expect(Buffer.byteLength(capNote('é'.repeat(600)))).toBe(1024);
    expect(capNote('x'.repeat(2000))).toHaveLength(1024);
    expect(capNote('€'.repeat(400)).length).toBe(341);
  });

  it('six fraction digits, UTC', () => {
    expect(formatTimeMicro(Date.UTC(2026, 0, 2, 3, 4, 5, 67))).toBe('2026-01-02T03:04:05.067000Z');
  });
});

describe('heal-left (docs/adr/0054)', () => {
  it('a Warning that names the drift and who could not re-create it', () => {
    const c = stepContent(
      {
        kind: 'heal-left',
        drift: ['digest apps/a'],
        left: ['apps/a (as ServiceAccount cozy-system/builder)'],
        stamp: 'u@1',
      },
      AG,
    );
    expect(c).toMatchObject({
      reason: 'ExternalArtifactDriftLeft',
      action: 'HealExternalArtifacts',
      type: 'Warning',
      stamp: 'u@1',
    });
    expect(c.note).toContain('digest apps/a');
    expect(c.note).toContain('could not re-create apps/a (as ServiceAccount cozy-system/builder)');
  });
});
