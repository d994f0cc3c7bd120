// Shared pieces of the end-to-end scenarios: a clean world before each scenario, one system per
// scenario (stopped after it), owned ArtifactGenerator/PackageSource pairs with the simulator's
// faults set before source-watcher first sees them, and reads of the state of the world.

import { afterEach, beforeEach, expect, inject } from 'vitest';
import {
  loadRbacRules,
  findRecoveryConfig,
  renderKustomize,
  rulesAllowing,
  RECOVERY_NAMESPACE,
  type K8sObject,
} from '../support/manifests.js';
import { CLIENTS, requestOf } from '../support/rbac-calls.js';
import type { LossRule } from '../harness/source-watcher-sim/index.js';
import {
  createSystem,
  type FunctionName,
  type System,
  type SystemOptions,
} from '../harness/system.js';
import {
  createArtifactGenerator,
  createOwnedPair,
  makeArtifactGenerator,
  testKubeConfig,
  uniqueName,
} from '../support/apiserver.js';
import { deleteAllArtifactGenerators } from '../support/ag-states.js';
import * as world from '../harness/system/world.js';
import type { AgObject, Condition, PackageSourceObject } from '../harness/system/world.js';

export const { readyCondition } = world;
export type { AgObject, Condition, PackageSourceObject, System };

export const kc = testKubeConfig();

/** The reads of the world, as the admin (around the proxy): undefined when the object is gone. */
export const readAg = (ref: Pair['ref']): Promise<AgObject | undefined> => world.readAg(kc, ref);
export const readPackageSource = (name: string): Promise<PackageSourceObject | undefined> =>
  world.readPackageSource(kc, name);
export const readAlarm = (): ReturnType<typeof world.readAlarm> => world.readAlarm(kc);
export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const AG_NAMESPACE = 'cozy-system';
/** docs/design.md §3: the backoff after attempt n (30 s doubling, capped at 4 m). */
export const BACKOFF_MS = [0, 30 * SECOND, MINUTE, 2 * MINUTE, 4 * MINUTE, 4 * MINUTE] as const;
/** docs/design.md §3: forces at stall + 30 s, 1 m, 2 m, 4 m, 8 m; give-up at about 12 m. */
export const REFERENCE_FORCE_OFFSETS_MS = [30, 60, 120, 240, 480].map((s) => s * SECOND);
/** Early detection: the first force right at the lost write, then the same backoff. */
export const EARLY_FORCE_OFFSETS_MS = [0, 30, 90, 210, 450].map((s) => s * SECOND);
/** Issue 13's target: stall -> first force within 3 s when the stall left the signal. */
export const EARLY_FORCE_WITHIN_MS = 3 * SECOND;
/** The product's time rule (RECOVERY_GRACE_PERIOD default), the fallback for stalls with no signal. */
export const DEFAULT_GRACE_MS = 150 * SECOND;
/** The follow-up alarm fires at most ~1.5 s late (3.5 s when due within 2 s). */
export const ALARM_PRECISION_MS = 3500;

export {
  ATTEMPTS,
  LAST_RECOVERY_AT,
  REASON_AWAITING,
  REASON_FORCED,
  REASON_STALLED,
  REQUESTED_AT,
} from '../harness/system/progress.js';

let running: System[] = [];

afterEach(async () => {
  const systems = running;
  running = [];
  for (const s of systems) {
    await s.stop();
    // stop() leaves nothing on the virtual clock.
    expect(s.clock.pendingTimers).toBe(0);
  }
});

/**
 * Deletes every AG and the alarm (other files leave them), then starts a system on the test
 * server. `keepWorld` skips the clean-up (for AGs made before the install).
 */
/**
 * Observe mode on the time rule (early detection off, the reference's 30 s grace), with every
 * client held to the rules of knative/overlays/observe by the recording proxy: a call no rule
 * allows gets 403 Forbidden, as the API server would answer.
 */
export async function startObserveSystem(
  opts: Pick<SystemOptions, 'logLevel'> = {},
): Promise<System> {
  const system = await startSystem({
    env: {
      RECOVERY_MODE: 'observe',
      RECOVERY_EARLY_DETECTION: 'off',
      RECOVERY_GRACE_PERIOD: '30s',
    },
    ...opts,
  });
  const observeObjects = renderKustomize('knative/overlays/observe');
  for (const [tag, serviceAccount] of CLIENTS) {
    const rules = loadRbacRules(serviceAccount, observeObjects, RECOVERY_NAMESPACE);
    system.proxy.addFault({
      kind: 'status',
      status: 403,
      match: { clientTag: tag, where: (c) => rulesAllowing(rules, requestOf(c)).length === 0 },
    });
  }
  return system;
}

export async function startSystem(
  opts: Omit<SystemOptions, 'kubeConfig' | 'serviceAccountTokens'> &
    Partial<Pick<SystemOptions, 'serviceAccountTokens'>> = {},
  { keepWorld = false }: { keepWorld?: boolean } = {},
): Promise<System> {
  if (!keepWorld) await resetWorld();
  const system = await createSystem({
    kubeConfig: kc,
    // The identities of the test world's install, unless the scenario brings its own (ADR 63).
    serviceAccountTokens: inject('serviceAccountTokens'),
    ...opts,
  });
  running.push(system);
  return system;
}

let senderAuthRender: K8sObject[] | undefined;
const senderAuthRendered = (): K8sObject[] =>
  (senderAuthRender ??= renderKustomize('knative/overlays/sender-auth'));

/** recovery-config's data as knative/overlays/sender-auth renders it. */
export function senderAuthConfigData(): Record<string, string> | undefined {
  return findRecoveryConfig(senderAuthRendered()).data;
}

/** A Service's own `env:` as knative/overlays/sender-auth renders it. */
function senderAuthServiceEnv(name: FunctionName): Record<string, string> {
  const svc = senderAuthRendered().find(
    (o) =>
      o.kind === 'Service' && o.apiVersion === 'serving.knative.dev/v1' && o.metadata.name === name,
  ) as {
    spec?: { template?: { spec?: { containers?: { env?: { name: string; value: string }[] }[] } } };
  };
  const env = svc?.spec?.template?.spec?.containers?.[0]?.env ?? [];
  return Object.fromEntries(env.map((e) => [e.name, e.value]));
}

/**
 * The system options of an install with sender authentication on (docs/adr/0056): Eventing's
 * OIDC as the Knative emulation plays it, the functions configured as
 * knative/overlays/sender-auth ships them.
 */
export function senderAuthSystem(): Pick<SystemOptions, 'oidc' | 'env' | 'envOf'> {
  return { oidc: true, env: { RECOVERY_AUTH: 'oidc' }, envOf: senderAuthServiceEnv };
}

export async function resetWorld(): Promise<void> {
  await deleteAllArtifactGenerators(kc);
  await world.deleteAlarm(kc);
}

export interface Pair {
  readonly name: string;
  /** `namespace/name` */
  readonly key: string;
  readonly ref: { namespace: string; name: string };
  /** The owning PackageSource's name, or null for a bare AG. */
  readonly packageSource: string | null;
}

export interface PairOptions {
  /** Lose source-watcher's conditions writes of this AG (default: none lost). */
  lose?: LossRule;
  /** source-watcher's build of this AG fails (Ready=False BuildFailed). */
  buildFailure?: boolean;
  /** Create the AG without a PackageSource owner. */
  bare?: boolean;
  prefix?: string;
  /** Runs with the AG's key before the AG exists (e.g. to set a per-AG simulator knob). */
  beforeCreate?: (key: string) => void;
}

/** Creates a PackageSource and the AG it owns (or a bare AG), with the simulator's knobs set first. */
export async function createPair(system: System, o: PairOptions = {}): Promise<Pair> {
  const name = uniqueName(o.prefix ?? 'e2e');
  const ref = { namespace: AG_NAMESPACE, name };
  const key = `${AG_NAMESPACE}/${name}`;
  if (o.lose !== undefined) system.sim.loseConditionsWrite(key, o.lose);
  if (o.buildFailure === true) system.sim.setBuildFailure(key, true);
  o.beforeCreate?.(key);
  if (o.bare === true) {
    await createArtifactGenerator(makeArtifactGenerator({ name }), kc);
  } else {
    await createOwnedPair({ name }, kc);
  }
  return { name, key, ref, packageSource: o.bare === true ? null : name };
}

/** The AG's current Ready, or undefined (no AG or no Ready). */
export async function agReady(ref: Pair['ref']): Promise<Condition | undefined> {
  return readyCondition(await readAg(ref));
}

export async function psReady(name: string): Promise<Condition | undefined> {
  return readyCondition(await readPackageSource(name));
}

/** Neither tracking annotation is on the AG. */
export function trackingCleared(ag: AgObject | undefined): boolean {
  const a = ag?.metadata.annotations ?? {};
  return (
    a['cozystack.io/source-watcher-recovery-attempts'] === undefined &&
    a['cozystack.io/source-watcher-last-recovery-at'] === undefined
  );
}

/** Every Ready reason the PackageSource carried over the run (from the harness's watch). */
export function psReasons(system: System, name: string): string[] {
  return [
    ...new Set(
      system.progress
        .packageSourceVersions(name)
        .map((v) => v.reason)
        .filter((r): r is string => r !== undefined),
    ),
  ];
}

/** When the running scenario began (real time), for its report's wall time. */
let scenarioStartedAt = performance.now();

beforeEach(() => {
  scenarioStartedAt = performance.now();
});

/**
 * One line per scenario: its figures (the simulated stall-to-outcome time, ...) and `wall`, the
 * real time since the scenario began unless the fields give their own.
 */
export function report(scenario: string, fields: Record<string, string | number>): void {
  const all = { ...fields, wall: fields['wall'] ?? seconds(performance.now() - scenarioStartedAt) };
  const parts = Object.entries(all).map(([k, v]) => `${k}=${v}`);
  console.log(`[e2e] ${scenario}: ${parts.join(' ')}`);
}

export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

/** Measures real elapsed time. */
export function wallClock(): () => string {
  const started = performance.now();
  return () => seconds(performance.now() - started);
}

/** A short unique name prefix for a fleet (its members' names stay well inside 63 characters). */
export function uniqueStormPrefix(prefix: string): string {
  return uniqueName(prefix).slice(0, prefix.length + 7);
}
