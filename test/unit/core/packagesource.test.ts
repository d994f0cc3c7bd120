import { describe, expect, it } from 'vitest';
import {
  controllingPackageSource,
  desiredPackageSourceReady,
  formatTimeNano,
  formatTimeSeconds,
  isPackageSourceDeleting,
  packageSourceNeedsUpdate,
  REASON_PATTERN,
  type ArtifactGenerator,
  type Condition,
  type OwnerReference,
  type PackageSource,
  type RecoveryMode,
} from '../../../shared/core/index.js';
import { CFG, cfgWith, claimedAg, makeAg, makePs, MIN, SEC, STALL } from './fixtures.js';
import { buildFailed, marker, progressing, succeeded } from '../../support/conditions.js';

const NOW = STALL + 20 * MIN;
const PS_GEN = 7;
const MODES: RecoveryMode[] = ['enforce', 'observe', 'off'];
/** The Ready condition desired for `ag` on a PackageSource without one, at NOW. */
const readyFor = (ag: ArtifactGenerator, cfg = CFG) =>
  desiredPackageSourceReady(ag, makePs(), NOW, cfg);
/** A PackageSource Ready (as far as given): what surface-stalled writes or finds there. */
const psReady = (status: string, reason: string, rest: Partial<Condition> = {}): Condition => ({
  type: 'Ready',
  status,
  reason,
  ...rest,
});

describe('controllingPackageSource', () => {
  const ref = (over: Partial<OwnerReference>): ArtifactGenerator => {
    const ag = makeAg();
    if (ag.metadata) {
      ag.metadata.ownerReferences = [
        {
          apiVersion: 'cozystack.io/v1alpha1',
          kind: 'PackageSource',
          name: 'p',
          controller: true,
          ...over,
        },
      ];
    }
    return ag;
  };
  it.each<[string, ArtifactGenerator, string | null]>([
    ['controller PackageSource', ref({}), 'p'],
    ['not a controller', ref({ controller: false }), null],
    ['controller unset', ref({ controller: undefined as unknown as boolean }), null],
    ['another kind', ref({ kind: 'HelmRelease' }), null],
    ['another group', ref({ apiVersion: 'example.com/v1' }), null],
    ['group prefix only', ref({ apiVersion: 'cozystack.io.evil/v1' }), null],
    ['empty name', ref({ name: '' }), null],
    ['no owner references', { metadata: { name: 'a', namespace: 'n' } }, null],
    [
      'junk owner references',
      { metadata: { ownerReferences: 'x' as unknown as OwnerReference[] } },
      null,
    ],
  ])('%s -> %s', (_label, ag, name) => {
    expect(controllingPackageSource(ag)).toBe(name);
  });
});

describe('desiredPackageSourceReady: honest copy-through', () => {
  it.each<[string, Condition, string | undefined]>([
    ['True', succeeded(NOW - MIN), '2'],
    ['upstream False', buildFailed(NOW - MIN), '2'],
    ['Unknown within grace', progressing(NOW - 5 * SEC), undefined],
  ])('copies %s with the PackageSource generation', (_label, ready, attempts) => {
    const ag = makeAg({
      ready,
      ...(attempts === undefined ? {} : { attempts }),
      last: NOW - 3 * MIN,
    });
    expect(readyFor(ag)).toEqual({
      type: 'Ready',
      status: ready.status,
      reason: ready.reason,
      message: ready.message,
      lastTransitionTime: ready.lastTransitionTime,
      observedGeneration: PS_GEN,
    });
  });

  // As the reference driver and earlier Cozystack (issue 12, item 2).
  it.each<[string, ArtifactGenerator]>([
    ['Ready missing', makeAg({ ready: null, created: NOW - 5 * SEC })],
    [
      'Ready with no usable status',
      makeAg({ ready: { ...succeeded(NOW), status: 'Maybe' } as Condition }),
    ],
  ])('%s -> Unknown/ArtifactGeneratorNotReady', (_label, ag) => {
    expect(readyFor(ag)).toEqual({
      type: 'Ready',
      status: 'Unknown',
      reason: 'ArtifactGeneratorNotReady',
      message:
        'ArtifactGenerator cozy-system/cozystack-platform has no Ready condition yet; ' +
        'waiting for source-watcher to report one',
      lastTransitionTime: formatTimeSeconds(NOW),
      observedGeneration: PS_GEN,
    });
  });

  it.each(MODES)('Ready missing -> ArtifactGeneratorNotReady in mode %s too', (mode) => {
    const ag = makeAg({ ready: null, created: NOW - 5 * SEC });
    expect(readyFor(ag, cfgWith({ mode }))?.reason).toBe('ArtifactGeneratorNotReady');
  });

  it('an unusable copied reason is replaced, never passed on', () => {
    const ag = makeAg({ ready: { ...succeeded(NOW), reason: 'bad reason!' } });
    const out = readyFor(ag);
    expect(out?.reason).toBe('ArtifactGeneratorReady');
    expect(out?.status).toBe('True');
  });

  it('omits observedGeneration when the PackageSource has none', () => {
    const ps = makePs();
    if (ps.metadata) delete ps.metadata.generation;
    const out = desiredPackageSourceReady(makeAg({ ready: succeeded(NOW) }), ps, NOW, CFG);
    expect(out).not.toHaveProperty('observedGeneration');
  });
});

describe('desiredPackageSourceReady: recovery in progress', () => {
  const last = NOW - 10 * SEC;
  const forced = (attempts: number, at = last): ArtifactGenerator =>
    claimedAg(attempts, at, { requestedAt: formatTimeNano(at) });

  it.each<[string, ArtifactGenerator, RegExp]>([
    [
      'first attempt pending',
      makeAg(),
      /^force-drift 0\/5: ArtifactGenerator cozy-system\/cozystack-platform .*fluxcd\/pkg#934.*the first attempt .* is pending$/,
    ],
    [
      'waiting after attempt 1',
      forced(1),
      /^force-drift 1\/5: .*cozy-system\/cozystack-platform \(fluxcd\/pkg#934\); the next attempt is due at 2026-11-29T16:50:20Z$/,
    ],
    [
      'waiting after attempt 3',
      forced(3),
      /^force-drift 3\/5: .*the next attempt is due at 2026-11-29T16:51:50Z$/,
    ],
    [
      'force due after attempt 2',
      forced(2, NOW - 2 * MIN),
      /^force-drift 2\/5: .*the next attempt is due at 2026-11-29T16:49:00Z$/,
    ],
    [
      'final window',
      forced(5),
      /^force-drift 5\/5: .*that was the last attempt, the verdict is due at 2026-11-29T16:53:50Z$/,
    ],
    [
      'resume',
      claimedAg(2, NOW - 20 * SEC),
      /^force-drift 2\/5: .*the next attempt is due at 2026-11-29T16:50:40Z$/,
    ],
  ])('%s: Unknown/AwaitingSourceWatcherRecovery', (_label, ag, message) => {
    const out = readyFor(ag);
    expect(out).toMatchObject(
      psReady('Unknown', 'AwaitingSourceWatcherRecovery', { observedGeneration: PS_GEN }),
    );
    expect(out?.message).toMatch(message);
  });

  it('gives the same text whenever it is evaluated inside one window', () => {
    const ag = forced(2);
    const texts = [NOW, NOW + 15 * SEC, NOW + 45 * SEC].map(
      (t) => desiredPackageSourceReady(ag, makePs(), t, CFG)?.message,
    );
    expect(new Set(texts).size).toBe(1);
  });

  it('says so in observe mode', () => {
    const out = readyFor(makeAg(), cfgWith({ mode: 'observe' }));
    expect(out?.message).toMatch(/observe mode/);
    expect(out?.reason).toBe('AwaitingSourceWatcherRecovery');
  });
});

describe('desiredPackageSourceReady: stalled', () => {
  it('False/SourceWatcherStalled with an operator-actionable message', () => {
    const ag = makeAg({ ready: marker(STALL), attempts: '5', last: NOW - 5 * MIN });
    const out = readyFor(ag);
    expect(out).toMatchObject(
      psReady('False', 'SourceWatcherStalled', {
        observedGeneration: PS_GEN,
        lastTransitionTime: formatTimeSeconds(NOW),
      }),
    );
    for (const part of [
      'cozy-system/cozystack-platform',
      'after 5 force-drift attempt(s)',
      'fluxcd/pkg#934',
      'kubectl -n flux-system rollout restart deployment/source-watcher',
      'kubectl -n cozy-system describe artifactgenerator cozystack-platform',
    ]) {
      expect(out?.message).toContain(part);
    }
  });
});

describe('desiredPackageSourceReady: the marker never leaks', () => {
  it.each(MODES)('mode %s', (mode) => {
    const ag = makeAg({ ready: marker(NOW - MIN) });
    const out = readyFor(ag, cfgWith({ mode }));
    expect(out?.reason).toBe('AwaitingSourceWatcherRecovery');
    expect(out?.status).toBe('Unknown');
    expect(JSON.stringify(out)).not.toContain('SourceWatcherRecoveryForced');
  });

  it('mode off copies a stuck AG through as it is', () => {
    const out = readyFor(makeAg(), cfgWith({ mode: 'off' }));
    expect(out).toMatchObject({
      status: 'Unknown',
      reason: 'Progressing',
      lastTransitionTime: formatTimeSeconds(STALL),
    });
  });
});

describe('desiredPackageSourceReady: lastTransitionTime of synthetic conditions', () => {
  const earlier = formatTimeSeconds(NOW - 3 * MIN);
  const since = { lastTransitionTime: earlier };
  it.each<[string, Condition | undefined, string]>([
    [
      'status unchanged -> kept',
      psReady('Unknown', 'AwaitingSourceWatcherRecovery', { message: 'older text', ...since }),
      earlier,
    ],
    [
      'status unchanged from a copied Progressing -> kept',
      psReady('Unknown', 'Progressing', { message: 'x', ...since }),
      earlier,
    ],
    [
      'status changed -> now',
      psReady('True', 'Succeeded', { message: 'x', ...since }),
      formatTimeSeconds(NOW),
    ],
    [
      'status unchanged but time unparseable -> now',
      psReady('Unknown', 'X', { message: 'x', lastTransitionTime: 'junk' }),
      formatTimeSeconds(NOW),
    ],
    ['no Ready yet -> now', undefined, formatTimeSeconds(NOW)],
  ])('%s', (_label, current, expected) => {
    const out = desiredPackageSourceReady(makeAg(), makePs(current), NOW, CFG);
    expect(out?.lastTransitionTime).toBe(expected);
  });
});

describe('desiredPackageSourceReady: bounds', () => {
  it('is null for an AG being deleted or without a name', () => {
    expect(readyFor(makeAg({ deleting: true }))).toBeNull();
    expect(readyFor({})).toBeNull();
  });

  it('caps a long copied message at 32768 characters', () => {
    const ag = makeAg({ ready: { ...buildFailed(NOW), message: 'x'.repeat(40_000) } });
    expect(readyFor(ag)?.message).toHaveLength(32_768);
  });

  it('never splits a surrogate pair when capping', () => {
    const message = `${'x'.repeat(32_767)}😀tail`;
    const ag = makeAg({ ready: { ...buildFailed(NOW), message } });
    expect(readyFor(ag)?.message).toBe('x'.repeat(32_767));
  });

  it('always carries a valid reason', () => {
    for (const ready of [succeeded(NOW), buildFailed(NOW), progressing(NOW), marker(NOW), null]) {
      const out = readyFor(makeAg({ ready, attempts: '5', last: NOW - 5 * MIN }));
      expect(out?.reason).toMatch(REASON_PATTERN);
    }
  });
});

describe('packageSourceNeedsUpdate', () => {
  it('is false once the desired condition is in place, true before', () => {
    const ag = makeAg({ ready: succeeded(NOW - MIN) });
    const desired = desiredPackageSourceReady(ag, makePs(progressing(STALL)), NOW, CFG);
    if (desired === null) throw new Error('expected a condition');
    expect(packageSourceNeedsUpdate(makePs(progressing(STALL)), desired)).toBe(true);
    expect(packageSourceNeedsUpdate(makePs(desired), desired)).toBe(false);
    expect(packageSourceNeedsUpdate(makePs(), desired)).toBe(true);
  });

  it('a stable recovery state needs one write, then none', () => {
    const ag = claimedAg(1, NOW - 10 * SEC, { requestedAt: formatTimeNano(NOW - 10 * SEC) });
    const first = readyFor(ag);
    if (first === null) throw new Error('expected a condition');
    const later = desiredPackageSourceReady(ag, makePs(first), NOW + 15 * SEC, CFG);
    if (later === null) throw new Error('expected a condition');
    expect(packageSourceNeedsUpdate(makePs(first), later)).toBe(false);
  });
});

describe('desiredPackageSourceReady: a PackageSource being deleted is left alone', () => {
  // Its deletion is held by a finalizer; the reference writes nothing to it (issue 12, item 1).
  const deleting = (): PackageSource => {
    const ps = makePs();
    if (ps.metadata) {
      ps.metadata.deletionTimestamp = formatTimeSeconds(NOW - MIN);
      ps.metadata.finalizers = ['cozystack.io/packagesource'];
    }
    return ps;
  };
  it.each<[string, ArtifactGenerator]>([
    ['healthy AG', makeAg({ ready: succeeded(NOW - MIN) })],
    ['stuck AG', makeAg()],
    ['AG in a backoff window', claimedAg(2, NOW - 10 * SEC)],
    ['AG past the final window', claimedAg(5, NOW - 5 * MIN)],
  ])('%s -> null (no write)', (_label, ag) => {
    expect(desiredPackageSourceReady(ag, deleting(), NOW, CFG)).toBeNull();
  });

  it('isPackageSourceDeleting reads deletionTimestamp only', () => {
    expect(isPackageSourceDeleting(deleting())).toBe(true);
    expect(isPackageSourceDeleting(makePs())).toBe(false);
    const empty = makePs();
    if (empty.metadata) empty.metadata.deletionTimestamp = '';
    expect(isPackageSourceDeleting(empty)).toBe(false);
  });
});
