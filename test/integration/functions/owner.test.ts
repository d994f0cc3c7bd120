// The owner PackageSource of an AG (shared/core/packagesource/owner.ts,
// shared/recovery/owner-refusal.ts), over real HTTP against the real test API server.
// The owner must be the owner (docs/adr/0053): a tenant who may create AGs in its own
// namespace writes any controller ownerReference it likes. The tenant's AGs here are created by
// the tenant identity (support/tenant-identity.ts), so the API server's RBAC decides what it can
// shape; surface-stalled and force-drift run as their own ServiceAccounts. A forged owner (a
// made-up uid, or the platform PackageSource's real uid copied into a tenant namespace) must leave
// the platform PackageSource untouched (resourceVersion and conditions), while the tenant's AG is
// recovered as a plain Flux AG and a PackageSourceOwnerRefused Event on it says why. The genuine
// pair (the AG in cozy-system, named like its PackageSource, with its uid) is still mirrored.
// A PackageSource being deleted (docs/adr/0020, parity with the reference driver) is left alone
// and its AG is not forced. force-drift's read of the owner under the first-install storm
// (docs/adr/0044-recovery-under-load.md): a transient failure fails open (the force still
// happens, warned once per process), a refusal still stops it.

import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ACTION_FORCE,
  ACTION_STALLED,
  ANNOTATION_ATTEMPTS,
  ANNOTATION_REQUESTED_AT,
  REASON_AWAITING,
  REASON_FORCED,
  REASON_STALLED,
  findCondition,
  readyOf,
  requestedAtFor,
  type ArtifactGenerator,
  type PackageSource,
} from '../../../shared/core/index.js';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  agRefOf,
  createPackageSource,
  customObjects,
  ensureNamespace,
  getArtifactGenerator,
  getPackageSource,
  makeArtifactGenerator,
  makePackageSource,
  MERGE_PATCH,
  uniqueName,
  createArtifactGenerator,
  writeArtifactGeneratorStatus,
} from '../../support/apiserver.js';
import { createAgWithStatus, healthyStatus, stuckStatus } from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import {
  actionEvent,
  agResourceEvent,
  postEvent,
  resyncPing,
  type Started,
} from '../../support/http-events.js';
import { listEventsAbout } from '../../support/kube-events.js';
import { tenantKubeConfig } from '../../support/tenant-identity.js';
import type { StartOptions } from '../../support/function-suite.js';
import type { CallMatch } from '../../support/kube-proxy.js';
import { marker } from '../../support/conditions.js';
import {
  capturingLogger,
  functionFile,
  GRACE_MS,
  ownedPairWith,
  trackingAnnotations,
} from './suite-kit.js';

const { T0, kc, suite } = functionFile('owner');

/** The Event reason of a refused owner (spelled out: the test must run against the old code). */
const REFUSED = 'PackageSourceOwnerRefused';
const PLATFORM_NS = 'cozy-system';
const PS_API = { group: 'cozystack.io', version: 'v1alpha1', plural: 'packagesources' };
const HOLD = 'test.cozystack.io/hold';
const held: string[] = [];

/**
 * The ownerReference apiVersion of a made-up uid. With the served one (cozystack.io/v1alpha1) the
 * test cluster's garbage collector deletes the AG within seconds (no PackageSource has that uid);
 * a tenant who wants its forgery to last names a version the collector cannot resolve, which it
 * then retries and never deletes. The old owner check took any cozystack.io/ version.
 */
const GC_UNRESOLVABLE_VERSION = 'cozystack.io/v1alpha999';

/**
 * Creates, as `kc`, the AG of `fixture` with `status`, its ownerReference's apiVersion replaced by
 * `ownerApiVersion` when given.
 */
async function createForgedAg(
  kc: KubeConfig,
  status: Parameters<typeof createAgWithStatus>[1],
  fixture: Parameters<typeof makeArtifactGenerator>[0],
  ownerApiVersion?: string,
) {
  const manifest = makeArtifactGenerator(fixture);
  const ref = manifest.metadata?.ownerReferences?.[0];
  if (ref !== undefined && ownerApiVersion !== undefined) ref.apiVersion = ownerApiVersion;
  const created = await createArtifactGenerator(manifest, kc);
  return writeArtifactGeneratorStatus(agRefOf(created), status, kc);
}

/** `namespace`'s tenant. The admin makes the namespace first: the AG helpers check it exists. */
async function tenantOf(namespace: string): Promise<KubeConfig> {
  await ensureNamespace(namespace);
  return tenantKubeConfig(namespace);
}

afterAll(async () => {
  for (const name of held) {
    await customObjects(kc)
      .patchClusterCustomObject(
        { ...PS_API, name, body: { metadata: { finalizers: null } } },
        MERGE_PATCH,
      )
      .catch(() => undefined);
  }
});

/** An AG forced five times since T0, its last window closed: due the verdict at T0 + 250 s. */
const GIVEN_UP = { ...stuckStatus(T0), conditions: [marker(T0)] };
/** An AG forced twice, the last at T0 + 90 s: Awaiting at T0 + 100 s. */
const AWAITING = { ...stuckStatus(T0), conditions: [marker(T0 + 90_000)] };

interface Platform {
  name: string;
  /** The PackageSource after surface-stalled brought it in step with its healthy AG. */
  ps: PackageSource;
  ag: ArtifactGenerator;
}

/**
 * A platform PackageSource and its genuine, healthy AG (cozy-system, its name, its uid), its Ready
 * brought in step by surface-stalled: what a forged AG must not move. `deleting`: held by a
 * finalizer and deleted.
 */
async function platform(s: Started, deleting = false): Promise<Platform> {
  const name = uniqueName('pkg-platform');
  const body = makePackageSource({ name });
  if (deleting) body.metadata = { ...body.metadata, finalizers: [HOLD] };
  const created = await createPackageSource(body, kc);
  const ag = await createAgWithStatus(kc, healthyStatus(T0 - 60_000), {
    name,
    namespace: PLATFORM_NS,
    owner: { name, uid: created.metadata?.uid ?? '' },
  });
  expect((await postEvent(s.url, agResourceEvent(ag))).body).toEqual({ result: 'updated' });
  if (deleting) {
    held.push(name);
    await customObjects(kc).deleteClusterCustomObject({ ...PS_API, name });
  }
  const ps = await getPackageSource(name, kc);
  expect(findCondition(ps.status?.conditions, 'Ready')?.status).toBe('True');
  return { name, ps, ag };
}

/** The platform PackageSource is as it was: same resourceVersion, same conditions. */
async function expectUntouched(p: Platform): Promise<void> {
  const now = await getPackageSource(p.name, kc);
  expect(now.metadata?.resourceVersion).toBe(p.ps.metadata?.resourceVersion);
  expect(now.status?.conditions).toEqual(p.ps.status?.conditions);
}

/** The Events regarding `ag`, as `reason/type` lines (with the refusal's note kept aside). */
async function eventsOf(ag: ArtifactGenerator) {
  const events = await listEventsAbout(kc, ag.metadata?.namespace ?? '', {
    uid: ag.metadata?.uid ?? '',
    name: ag.metadata?.name ?? '',
  });
  return {
    reasons: events.map((e) => `${e.type} ${e.reason}`).sort(),
    refusal: events.find((e) => e.reason === REFUSED),
  };
}

interface Forgery {
  title: string;
  /** The tenant's namespace. */
  namespace: string;
  /** The uid the tenant writes into its ownerReference, given the platform PackageSource. */
  uid: (ps: PackageSource) => string;
  /** Its apiVersion, when not the served one. */
  ownerApiVersion?: string;
  /** What the refusal Event's note says. */
  note: RegExp;
}

const FORGERIES: Forgery[] = [
  {
    title: '(1) name-only forgery: a made-up uid, in tenant-a',
    namespace: 'tenant-a',
    uid: () => '00000000-0000-4000-8000-000000000001',
    ownerApiVersion: GC_UNRESOLVABLE_VERSION,
    note: /in namespace "tenant-a"; PackageSource ArtifactGenerators live in cozy-system/,
  },
  {
    title: "(2) the platform PackageSource's real uid copied into tenant-b",
    namespace: 'tenant-b',
    uid: (ps) => ps.metadata?.uid ?? '',
    note: /in namespace "tenant-b"; PackageSource ArtifactGenerators live in cozy-system/,
  },
];

describe.each(FORGERIES)('$title', (f) => {
  let tenant: KubeConfig;
  /** The tenant's AG in `status`, named like the platform PackageSource and naming it as owner. */
  const tenantAg = async (
    p: Platform,
    status: Parameters<typeof createAgWithStatus>[1],
    annotations: Record<string, string> = {},
  ) => {
    tenant ??= await tenantOf(f.namespace);
    const fixture = {
      name: p.name,
      namespace: f.namespace,
      owner: { name: p.name, uid: f.uid(p.ps) },
      annotations,
    };
    return createForgedAg(tenant, status, fixture, f.ownerApiVersion);
  };

  it("the tenant AG's Awaiting window is not mirrored into the platform PackageSource", async () => {
    const s = await suite.startSurfaceStalled(new SettableClock(T0 + 100_000));
    const p = await platform(s);
    const ag = await tenantAg(p, AWAITING, trackingAnnotations(2, T0 + 90_000));
    const answer = await postEvent(s.url, agResourceEvent(ag));
    await expectUntouched(p);
    expect(answer.body).toEqual({ result: 'owner-refused' });
    const { refusal } = await eventsOf(ag);
    expect(refusal).toMatchObject({ type: 'Warning', action: 'VerifyOwner' });
    expect(refusal?.note).toContain(`PackageSource ${p.name}`);
    expect(refusal?.note).toMatch(f.note);
  });

  it("the tenant AG's verdict is its own (an Event on the AG), never the platform's Ready", async () => {
    const s = await suite.startSurfaceStalled(new SettableClock(T0 + 250_000));
    const p = await platform(s);
    const ag = await tenantAg(p, GIVEN_UP, trackingAnnotations(5, T0));
    const answer = await postEvent(s.url, actionEvent(ACTION_STALLED, ag, 5, T0));
    await expectUntouched(p);
    expect(answer.body).toEqual({ result: 'owner-refused' });
    expect((await eventsOf(ag)).reasons).toEqual([
      'Warning PackageSourceOwnerRefused',
      `Warning ${REASON_STALLED}`,
    ]);
    // The resync sees the same AG and leaves the platform PackageSource alone too.
    expect((await postEvent(s.url, resyncPing({}))).status).toBe(200);
    await expectUntouched(p);
  });

  it('the tenant AG is forced as a plain Flux AG', async () => {
    const s = await suite.startSurfaceStalled(new SettableClock(T0 + 31_000));
    const p = await platform(s);
    const ag = await tenantAg(p, stuckStatus(T0));
    const fd = await suite.startForceDrift(new SettableClock(T0 + 31_000));
    expect((await postEvent(fd.url, actionEvent(ACTION_FORCE, ag, 0, T0))).body).toEqual({
      result: 'forced',
    });
    const after = await getArtifactGenerator(agRefOf(ag), tenant);
    expect(after.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBe('1');
    expect(readyOf(after)?.reason).toBe(REASON_FORCED);
    // surface-stalled, given the forced AG, still mirrors nothing.
    const answer = await postEvent(s.url, agResourceEvent(after));
    await expectUntouched(p);
    expect(answer.body).toEqual({ result: 'owner-refused' });
    expect((await eventsOf(ag)).refusal?.note).toMatch(f.note);
  });

  it("a forged owner's deletion does not hold back the force", async () => {
    const s = await suite.startSurfaceStalled(new SettableClock(T0 + 31_000));
    const p = await platform(s, true);
    expect(p.ps.metadata?.deletionTimestamp).toBeTruthy();
    const ag = await tenantAg(p, stuckStatus(T0));
    const fd = await suite.startForceDrift(new SettableClock(T0 + 31_000));
    expect((await postEvent(fd.url, actionEvent(ACTION_FORCE, ag, 0, T0))).body).toEqual({
      result: 'forced',
    });
    expect((await eventsOf(ag)).refusal?.note).toMatch(f.note);
    const after = await getArtifactGenerator(agRefOf(ag), tenant);
    expect(after.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBe('1');
  });
});

describe('(uid rule) a tenant namespace configured as a PackageSource namespace', () => {
  const env = { RECOVERY_PACKAGESOURCE_AG_NAMESPACES: `${PLATFORM_NS}, tenant-a` };
  it('a made-up uid there is still refused: the PackageSource read has another uid', async () => {
    const s = await suite.startSurfaceStalled(new SettableClock(T0 + 100_000), { env });
    const p = await platform(s);
    const tenant = await tenantOf('tenant-a');
    const fixture = {
      name: p.name,
      namespace: 'tenant-a',
      owner: { name: p.name, uid: '00000000-0000-4000-8000-000000000002' },
      annotations: trackingAnnotations(2, T0 + 90_000),
    };
    const ag = await createForgedAg(tenant, AWAITING, fixture, GC_UNRESOLVABLE_VERSION);
    const answer = await postEvent(s.url, agResourceEvent(ag));
    await expectUntouched(p);
    expect(answer.body).toEqual({ result: 'owner-refused' });
    const { refusal } = await eventsOf(ag);
    expect(refusal?.note).toContain(`is not PackageSource ${p.name}'s uid`);
    expect(refusal?.note).not.toContain(p.ps.metadata?.uid ?? '-');
  });
});

describe('(3) the genuine pair is still mirrored', () => {
  /** A PackageSource and its genuine AG (cozy-system, its name, its uid) in `status`. */
  async function genuinePair(
    status: Parameters<typeof createAgWithStatus>[1],
    annotations: Record<string, string> = {},
    deleting = false,
  ) {
    const name = uniqueName('pkg-platform');
    const body = makePackageSource({ name });
    if (deleting) body.metadata = { ...body.metadata, finalizers: [HOLD] };
    const ps = await createPackageSource(body, kc);
    const ag = await createAgWithStatus(kc, status, {
      name,
      namespace: PLATFORM_NS,
      owner: { name, uid: ps.metadata?.uid ?? '' },
      annotations,
    });
    if (deleting) {
      held.push(name);
      await customObjects(kc).deleteClusterCustomObject({ ...PS_API, name });
    }
    return { name, ag };
  }
  const readyOfPs = async (name: string) =>
    findCondition((await getPackageSource(name, kc)).status?.conditions, 'Ready');

  it('its Awaiting window shows on its PackageSource; no refusal Event', async () => {
    const s = await suite.startSurfaceStalled(new SettableClock(T0 + 100_000));
    const { name, ag } = await genuinePair(AWAITING, trackingAnnotations(2, T0 + 90_000));
    expect((await postEvent(s.url, agResourceEvent(ag))).body).toEqual({ result: 'updated' });
    expect(await readyOfPs(name)).toMatchObject({ status: 'Unknown', reason: REASON_AWAITING });
    expect((await eventsOf(ag)).refusal).toBeUndefined();
  });

  it('its verdict shows on its PackageSource', async () => {
    const s = await suite.startSurfaceStalled(new SettableClock(T0 + 250_000));
    const { name, ag } = await genuinePair(GIVEN_UP, trackingAnnotations(5, T0));
    expect((await postEvent(s.url, actionEvent(ACTION_STALLED, ag, 5, T0))).body).toEqual({
      result: 'updated',
    });
    expect(await readyOfPs(name)).toMatchObject({ status: 'False', reason: REASON_STALLED });
    expect((await eventsOf(ag)).reasons).toEqual([`Warning ${REASON_STALLED}`]);
  });

  it("its PackageSource's deletion holds its force back (docs/adr/0020)", async () => {
    const { ag } = await genuinePair(stuckStatus(T0), {}, true);
    const fd = await suite.startForceDrift(new SettableClock(T0 + 31_000));
    expect((await postEvent(fd.url, actionEvent(ACTION_FORCE, ag, 0, T0))).body).toEqual({
      result: 'owner-deleting',
    });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.resourceVersion).toBe(ag.metadata?.resourceVersion);
  });
});

describe('an owner PackageSource being deleted', () => {
  /** A PackageSource held by a finalizer and deleted, and an AG it controls in `status`. */
  async function deletingPair(
    status: Parameters<typeof createAgWithStatus>[1],
    annotations?: Record<string, string>,
  ) {
    const { name, ag } = await ownedPairWith(kc, status, {
      finalizers: [HOLD],
      ...(annotations ? { annotations } : {}),
    });
    held.push(name);
    await customObjects(kc).deleteClusterCustomObject({ ...PS_API, name });
    const ps = await getPackageSource(name, kc);
    expect(ps.metadata?.deletionTimestamp).toBeTruthy();
    return { name, ag, ps };
  }
  const forceOf = (ag: ArtifactGenerator, attempts = 0) =>
    actionEvent(ACTION_FORCE, ag, attempts, T0);

  it('its AG is not forced: force-drift writes nothing', async () => {
    const fd = await suite.startForceDrift(new SettableClock(T0 + 31_000));
    const { ag } = await deletingPair(stuckStatus(T0));
    expect(await postEvent(fd.url, forceOf(ag))).toMatchObject({
      status: 200,
      body: { result: 'owner-deleting' },
    });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.resourceVersion).toBe(ag.metadata?.resourceVersion);
    expect(after.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBeUndefined();
    expect(readyOf(after)?.reason).not.toBe(REASON_FORCED);
  });

  it('an interrupted force of ours is not finished either', async () => {
    const claim = T0 - 20_000;
    const fd = await suite.startForceDrift(new SettableClock(T0));
    const { ag } = await deletingPair(
      { ...stuckStatus(T0 - 120_000), conditions: [marker(claim)] },
      trackingAnnotations(1, claim, false),
    );
    expect((await postEvent(fd.url, forceOf(ag, 1))).body).toEqual({
      result: 'owner-deleting',
    });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.resourceVersion).toBe(ag.metadata?.resourceVersion);
    expect(after.metadata?.annotations?.[ANNOTATION_REQUESTED_AT]).toBeUndefined();
  });

  it('the same AG is forced while its PackageSource is not being deleted (control)', async () => {
    const fd = await suite.startForceDrift(new SettableClock(T0 + 31_000));
    const { ag } = await ownedPairWith(kc, stuckStatus(T0));
    expect((await postEvent(fd.url, forceOf(ag))).body).toEqual({ result: 'forced' });
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBe('1');
  });

  it('surface-stalled writes nothing to it, on an AG event or a resync', async () => {
    const s = await suite.startSurfaceStalled(new SettableClock(T0 + 31_000));
    const { name, ag, ps } = await deletingPair(stuckStatus(T0));
    expect(await postEvent(s.url, agResourceEvent(ag))).toMatchObject({
      status: 200,
      body: { result: 'left-alone' },
    });
    expect((await postEvent(s.url, resyncPing())).status).toBe(200);
    const after = await getPackageSource(name, kc);
    expect(after.metadata?.resourceVersion).toBe(ps.metadata?.resourceVersion);
    expect(findCondition(after.status?.conditions, 'Ready')).toBeUndefined();
  });
});

describe('force-drift: the owner PackageSource read', () => {
  beforeEach(() => {
    suite.proxy.clearFaults();
    suite.proxy.clearCalls();
  });

  const ownerRead: CallMatch = {
    clientTag: 'force-drift',
    verb: 'get',
    resource: 'packagesources',
  };
  /** An owned AG stuck since T0 (past the time rule's grace at T0 + GRACE_MS + 1 s). */
  const stuckOwnedAg = async () => (await ownedPairWith(kc, stuckStatus(T0))).ag;
  const now = T0 + GRACE_MS + 1_000;
  const forced = { status: 200, body: { result: 'forced' } };
  /** Starts force-drift at `now` with every owner read answered `status`; it posts a first force. */
  async function ownerReadAnswers(status: number, opts: StartOptions = {}) {
    const f = await suite.startForceDrift(new SettableClock(now), opts);
    suite.proxy.addFault({ kind: 'status', status, match: ownerRead });
    return (ag: ArtifactGenerator) => postEvent(f.url, actionEvent(ACTION_FORCE, ag, 0, now));
  }

  it('fails transiently (500): the force still happens, claimed, marked and bumped', async () => {
    const ag = await stuckOwnedAg();
    const force = await ownerReadAnswers(500);
    expect(await force(ag)).toMatchObject(forced);
    // The read and its in-place retry (ADR 70).
    expect(suite.proxy.count(ownerRead)).toBe(2);
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBe('1');
    expect(after.metadata?.annotations?.[ANNOTATION_REQUESTED_AT]).toBe(requestedAtFor(now));
    expect(readyOf(after)?.reason).toBe(REASON_FORCED);
  });

  it('fails transiently on two forces in one process: one warn line, then debug', async () => {
    const { logger, logs } = capturingLogger('force-drift');
    const force = await ownerReadAnswers(500, { logger });
    for (const ag of [await stuckOwnedAg(), await stuckOwnedAg()]) {
      expect(await force(ag)).toMatchObject(forced);
    }
    const unreadable = logs.records.filter((l) =>
      l.msg.startsWith('owner PackageSource unreadable'),
    );
    expect(unreadable.map((l) => l.level)).toEqual(['warn', 'debug']);
  });

  it('is forbidden (403): the force stops, nothing written', async () => {
    const ag = await stuckOwnedAg();
    const force = await ownerReadAnswers(403);
    expect((await force(ag)).status).toBe(500);
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.resourceVersion).toBe(ag.metadata?.resourceVersion);
  });
});
