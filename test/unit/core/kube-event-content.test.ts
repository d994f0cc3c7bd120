// The Event of each recovery step: reason, type, action, note and name (docs/adr/0033).

import { describe, expect, it } from 'vitest';
import {
  buildEvent,
  capNote,
  eventName,
  formatTimeMicro,
  isDns1123Subdomain,
  NOTE_MAX_BYTES,
  REPORTING_CONTROLLER,
  stepContent,
  type EventStep,
  type EventSubject,
} from '../../../shared/core/index.js';
import { STALL } from './fixtures.js';

const AG: EventSubject = { namespace: 'cozy-system', name: 'pkg-01', uid: 'uid-1' };
const T = STALL + 1234;

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
      { kind: 'stalled', attempts: 5, claimAt: T, packageSource: 'pkg-01' },
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

describe('buildEvent', () => {
  it('regards the AG (uid included), names the controller and instance, eventTime in µs', () => {
    const e = buildEvent(
      { kind: 'forced', attempt: 1, maxAttempts: 5, claimAt: T },
      AG,
      'pod-a',
      T,
    );
    expect(e).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { namespace: 'cozy-system' },
      reportingController: REPORTING_CONTROLLER,
      reportingInstance: 'pod-a',
      eventTime: '2026-11-29T16:30:01.234000Z',
      regarding: {
        apiVersion: 'source.extensions.fluxcd.io/v1beta1',
        kind: 'ArtifactGenerator',
        namespace: 'cozy-system',
        name: 'pkg-01',
        uid: 'uid-1',
      },
    });
    expect(e.related).toBeUndefined();
    expect(e.series).toBeUndefined();
    expect(isDns1123Subdomain(e.metadata.name)).toBe(true);
  });

  it('the verdict names the PackageSource as the related object', () => {
    const e = buildEvent(
      { kind: 'stalled', attempts: 5, claimAt: T, packageSource: 'pkg-01' },
      AG,
      'pod-a',
      T,
    );
    expect(e.related).toEqual({
      apiVersion: 'cozystack.io/v1alpha1',
      kind: 'PackageSource',
      name: 'pkg-01',
    });
    expect(e.type).toBe('Warning');
  });

  it('the name does not depend on the replica or the moment it is reported', () => {
    const step: EventStep = { kind: 'forced', attempt: 1, maxAttempts: 5, claimAt: T };
    const a = buildEvent(step, AG, 'pod-a', T);
    const b = buildEvent(step, AG, 'pod-b', T + 5000);
    expect(a.metadata.name).toBe(b.metadata.name);
  });

  it('reportingInstance is cut to 128 characters', () => {
    const e = buildEvent(
      { kind: 'forced', attempt: 1, maxAttempts: 5, claimAt: T },
      AG,
      'p'.repeat(300),
      T,
    );
    expect(e.reportingInstance).toHaveLength(128);
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
