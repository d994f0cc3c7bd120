import { describe, expect, it } from 'vitest';
import {
  buildEvent,
  EVENT_ACTION_VERIFY_OWNER,
  EVENT_REASON_OWNER_REFUSED,
  NOTE_MAX_BYTES,
  ownerClaim,
  ownerRefusedStep,
  precheckOwner,
  refusalText,
  stepContent,
  verifyOwner,
  type ArtifactGenerator,
  type OwnerRefusal,
  type OwnerReference,
  type OwnerVerdict,
  type PackageSource,
  type PackageSourceOwnerRule,
} from '../../../shared/core/index.js';
import { makeAg, makePs, STALL } from './fixtures.js';

const PS_NAME = 'cozystack-platform';
const PS_UID = 'ps-uid-1';
const RULE: PackageSourceOwnerRule = { agNamespaces: ['cozy-system'] };

/** The fixture AG (cozy-system/cozystack-platform, owned by uid ps-uid-1), with `over`. */
function ag(
  over: { namespace?: string; name?: string; ref?: Partial<OwnerReference> | null } = {},
): ArtifactGenerator {
  const a = makeAg();
  const meta = a.metadata ?? {};
  if (over.namespace !== undefined) meta.namespace = over.namespace;
  if (over.name !== undefined) meta.name = over.name;
  if (over.ref === null) delete meta.ownerReferences;
  else if (over.ref !== undefined) {
    meta.ownerReferences = [{ ...meta.ownerReferences?.[0], ...over.ref }];
  }
  return a;
}

/** The PackageSource as read from the API server: its name and uid. */
function ps(over: { name?: string; uid?: string | undefined } = {}): PackageSource {
  const p = makePs();
  p.metadata = { ...p.metadata, name: over.name ?? PS_NAME };
  const uid = 'uid' in over ? over.uid : PS_UID;
  if (uid !== undefined) p.metadata.uid = uid;
  return p;
}

const verified: OwnerVerdict = { kind: 'verified', name: PS_NAME };

describe('ownerClaim: the controller ownerReference, unverified', () => {
  it.each<[string, ArtifactGenerator, ReturnType<typeof ownerClaim>]>([
    ['name and uid', ag(), { name: PS_NAME, uid: PS_UID }],
    ['no uid', ag({ ref: { uid: undefined as unknown as string } }), { name: PS_NAME, uid: '' }],
    [
      'a uid that is no string',
      ag({ ref: { uid: 7 as unknown as string } }),
      { name: PS_NAME, uid: '' },
    ],
    ['no owner references', ag({ ref: null }), null],
    ['not a controller', ag({ ref: { controller: false } }), null],
    ['another kind', ag({ ref: { kind: 'HelmRelease' } }), null],
  ])('%s', (_label, a, claim) => {
    expect(ownerClaim(a)).toEqual(claim);
  });
});

describe('verifyOwner: the owner must be the owner', () => {
  it.each<
    [
      string,
      ArtifactGenerator,
      PackageSource,
      PackageSourceOwnerRule,
      OwnerVerdict['kind'],
      string | null,
    ]
  >([
    ['the genuine pair', ag(), ps(), RULE, 'verified', null],
    ['no owner claimed', ag({ ref: null }), ps(), RULE, 'none', null],
    // A tenant AG in its own namespace naming the platform PackageSource (issue 32).
    [
      'a made-up uid in a tenant namespace',
      ag({ namespace: 'tenant-a', ref: { uid: 'made-up' } }),
      ps(),
      RULE,
      'refused',
      'namespace',
    ],
    [
      'the real uid copied into a tenant namespace',
      ag({ namespace: 'tenant-b' }),
      ps(),
      RULE,
      'refused',
      'namespace',
    ],
    ['in cozy-system, named otherwise', ag({ name: 'other' }), ps(), RULE, 'refused', 'name'],
    ['in cozy-system, another uid', ag({ ref: { uid: 'made-up' } }), ps(), RULE, 'refused', 'uid'],
    ['in cozy-system, no uid', ag({ ref: { uid: '' } }), ps(), RULE, 'refused', 'no-uid'],
    ['the PackageSource read has no uid', ag(), ps({ uid: undefined }), RULE, 'refused', 'uid'],
    ['a PackageSource of another name given', ag(), ps({ name: 'other' }), RULE, 'refused', 'uid'],
    [
      'a configured second namespace',
      ag({ namespace: 'packages' }),
      ps(),
      { agNamespaces: ['cozy-system', 'packages'] },
      'verified',
      null,
    ],
    [
      'the default namespace not configured',
      ag(),
      ps(),
      { agNamespaces: ['packages'] },
      'refused',
      'namespace',
    ],
    [
      'a configured tenant namespace, a made-up uid',
      ag({ namespace: 'tenant-a', ref: { uid: 'x' } }),
      ps(),
      { agNamespaces: ['cozy-system', 'tenant-a'] },
      'refused',
      'uid',
    ],
    ['an AG with no namespace', ag({ namespace: '' }), ps(), RULE, 'refused', 'namespace'],
  ])('%s', (_label, a, p, rule, kind, why) => {
    const v = verifyOwner(a, p, rule);
    expect(v.kind).toBe(kind);
    if (kind === 'verified') expect(v).toEqual(verified);
    if (v.kind === 'refused') {
      expect(v.why).toBe(why);
      expect(v.claim.name).toBe(PS_NAME);
    }
    // The precheck agrees on everything it can decide without the PackageSource.
    const pre = precheckOwner(a, rule);
    if (why === 'namespace' || why === 'name' || why === 'no-uid') expect(pre).toEqual(v);
    else if (kind !== 'none') expect(pre).toMatchObject({ kind: 'read', claim: { name: PS_NAME } });
  });

  it("a uid refusal never repeats the PackageSource's real uid", () => {
    const v = verifyOwner(ag({ ref: { uid: 'made-up' } }), ps(), RULE) as OwnerRefusal;
    expect(refusalText(v)).toBe(
      `controller ownerReference to PackageSource ${PS_NAME} refused: the ownerReference's uid "made-up" is not PackageSource ${PS_NAME}'s uid`,
    );
    expect(refusalText(v)).not.toContain(PS_UID);
  });

  it('a namespace refusal names the namespace and where PackageSource AGs live', () => {
    const v = precheckOwner(ag({ namespace: 'tenant-a' }), {
      agNamespaces: ['cozy-system', 'packages'],
    }) as OwnerRefusal;
    expect(v.detail).toBe(
      'the ArtifactGenerator is in namespace "tenant-a"; PackageSource ArtifactGenerators live in cozy-system, packages',
    );
  });
});

describe('the PackageSourceOwnerRefused Event', () => {
  const subject = { namespace: 'tenant-a', name: PS_NAME, uid: 'ag-uid-9' };
  const refusal = precheckOwner(
    ag({ namespace: 'tenant-a', ref: { uid: 'forged' } }),
    RULE,
  ) as OwnerRefusal;

  it('a Warning on the AG that names the refused reference and why', () => {
    const c = stepContent(ownerRefusedStep(refusal), subject);
    expect(c).toMatchObject({
      reason: EVENT_REASON_OWNER_REFUSED,
      action: EVENT_ACTION_VERIFY_OWNER,
      type: 'Warning',
    });
    expect(c.note).toBe(
      `controller ownerReference to PackageSource ${PS_NAME} (uid "forged") refused: the ` +
        `ArtifactGenerator is in namespace "tenant-a"; PackageSource ArtifactGenerators live in ` +
        `cozy-system. Recovered as a plain Flux ArtifactGenerator; no PackageSource shows its state`,
    );
  });

  it('the same refusal is the same Event (its series bounded as every Event); another reference is another', () => {
    const name = (r: OwnerRefusal) =>
      buildEvent(ownerRefusedStep(r), subject, 'surface-stalled-0', STALL).metadata.name;
    const again = precheckOwner(
      ag({ namespace: 'tenant-a', ref: { uid: 'forged' } }),
      RULE,
    ) as OwnerRefusal;
    const other = precheckOwner(
      ag({ namespace: 'tenant-a', ref: { uid: 'forged-2' } }),
      RULE,
    ) as OwnerRefusal;
    expect(name(again)).toBe(name(refusal));
    expect(name(other)).not.toBe(name(refusal));
    const e = buildEvent(ownerRefusedStep(refusal), subject, 'force-drift-0', STALL);
    expect(e.metadata.namespace).toBe('tenant-a');
    expect(e.regarding).toMatchObject({
      kind: 'ArtifactGenerator',
      namespace: 'tenant-a',
      uid: 'ag-uid-9',
    });
  });

  it('a tenant-sized uid keeps the note within what the API server takes', () => {
    const huge = precheckOwner(
      ag({
        namespace: 'tenant-a',
        name: 'n'.repeat(253),
        ref: { uid: 'u'.repeat(5000), name: 'p'.repeat(253) },
      }),
      RULE,
    ) as OwnerRefusal;
    const e = buildEvent(ownerRefusedStep(huge), subject, 'x', STALL);
    expect(Buffer.byteLength(e.note)).toBeLessThanOrEqual(NOTE_MAX_BYTES);
    expect(e.metadata.name.length).toBeLessThanOrEqual(253);
  });
});
