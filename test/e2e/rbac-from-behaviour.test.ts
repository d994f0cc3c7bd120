// RBAC from behaviour: run representative flows through the whole system, with each function and
// the ApiServerSource calling the API server as its own ServiceAccount (RBAC enforced by
// kube-apiserver), collect every API call each client really made (the recording proxy tags them
// by client), and check them against the ServiceAccounts' rules in knative/: no call was denied,
// every call is allowed (nothing missing), and every rule is used by some call (nothing granted
// for nothing). `npm run test:rbac-rules` removes each rule in turn and shows a test failing.

import { describe, expect, it } from 'vitest';
import { CLIENTS, requestOf } from '../support/rbac-calls.js';
import {
  loadRbacRules,
  rulesAllowing,
  RECOVERY_NAMESPACE,
  type PolicyRule,
} from '../support/manifests.js';
import {
  AG_NAMESPACE,
  kc,
  MINUTE,
  type System,
  REASON_STALLED,
  createPair,
  psReady,
  readAlarm,
  report,
  senderAuthSystem,
  startSystem,
} from './scenario-kit.js';
import { readEa, setDigestByHand } from './external-artifacts.js';
import { readyOf } from '../../shared/core/index.js';
import { customObjects, getArtifactGenerator, MERGE_PATCH } from '../support/apiserver.js';
import { ensureNewerAgFields } from '../support/newer-ag-crd.js';
import { AG_RESOURCE } from '../harness/knative/index.js';

function describeRule(rule: PolicyRule): string {
  const names = rule.resourceNames ? ` names=${rule.resourceNames.join(',')}` : '';
  return `${rule.from ?? '?'}: ${rule.verbs.join(',')} ${rule.resources.join(',')}${names}`;
}

async function healByHand(system: System, name: string): Promise<void> {
  const uidOf = async (): Promise<string | undefined> => (await readEa(name))?.metadata.uid;
  const before = await uidOf();
  expect(before, 'the simulator generated the ExternalArtifact').toBeDefined();
  await setDigestByHand(name, 'kubectl-patch', 'f');
  await system.runUntil(
    async () => {
      const now = await uidOf();
      return now !== undefined && now !== before;
    },
    { maxVirtualMs: MINUTE, stepMs: 500, what: 'the ExternalArtifact re-created' },
  );
  expect(
    system.proxy.count({
      clientTag: 'heal-external-artifacts',
      resource: 'events',
      verb: 'create',
    }),
  ).toBeGreaterThan(0);
}

/**
 * v2.3 (docs/adr/0054): the AG names a spec.serviceAccountName that may not apply
 * ExternalArtifacts; a digest changed by hand: the heal asks the authorizer, deletes nothing.
 */
async function leftByHand(system: System, name: string): Promise<void> {
  const ref = { namespace: AG_NAMESPACE, name };
  await ensureNewerAgFields(kc, AG_NAMESPACE);
  await customObjects(kc).patchNamespacedCustomObject(
    { ...AG_RESOURCE, ...ref, body: { spec: { serviceAccountName: 'nobody' } } },
    MERGE_PATCH,
  );
  await system.runUntil(
    async () => {
      const ag = await getArtifactGenerator(ref, kc);
      const ready = readyOf(ag);
      return ready?.status === 'True' && ready.observedGeneration === ag.metadata?.generation;
    },
    { maxVirtualMs: MINUTE, stepMs: 500, what: 'the new generation built' },
  );
  const before = (await readEa(name))?.metadata.uid;
  await setDigestByHand(name, 'kubectl-patch', 'e');
  await system.runUntil(
    async () =>
      system.proxy.count({
        clientTag: 'heal-external-artifacts',
        resource: 'subjectaccessreviews',
        verb: 'create',
      }) > 0,
    { maxVirtualMs: MINUTE, stepMs: 500, what: 'the re-creating identity asked about' },
  );
  expect((await readEa(name))?.metadata.uid).toBe(before);
}

describe('e2e: RBAC from behaviour', () => {
  it('every call each function makes is allowed by its role, and every rule is used', async () => {
    // The simulator generates ExternalArtifacts, so heal-external-artifacts has work (below).
    // Sender authentication on (knative/overlays/sender-auth), so the TokenReview grant every
    // install carries is used too.
    const system = await startSystem({
      sourceWatcher: { externalArtifacts: true },
      ...senderAuthSystem(),
    });
    // stuck -> forced -> recovered
    const healed = await createPair(system, { lose: { times: 1 }, prefix: 'healed' });
    // source-watcher never records a verdict -> SourceWatcherStalled
    const stalled = await createPair(system, { lose: {}, prefix: 'stalled' });
    await system.runUntil(
      async () =>
        system.progress.of(healed.key).recoveries.length === 1 &&
        (await psReady(stalled.name))?.reason === REASON_STALLED &&
        (await readAlarm()) === undefined,
      { maxVirtualMs: 16 * MINUTE, what: 'recovery, verdict and the alarm removed' },
    );

    // heal-external-artifacts: the healed AG's ExternalArtifact changed by hand (kubectl patch
    // keeps owning the digest): deleted for source-watcher to re-create, then one bump.
    await healByHand(system, healed.name);
    await leftByHand(system, healed.name);

    // The flows really happened: resync sweeps and every alarm operation.
    const resyncs = system.knative.pings.firesOf(RECOVERY_NAMESPACE, 'resync');
    expect(resyncs.length).toBeGreaterThanOrEqual(2);
    for (const verb of ['create', 'patch', 'delete'] as const) {
      expect(
        system.proxy.count({ clientTag: 'detect', resource: 'pingsources', verb }),
        `alarm ${verb}`,
      ).toBeGreaterThan(0);
    }

    const rows: string[] = [];
    const notes: string[] = [];
    for (const [tag, serviceAccount] of CLIENTS) {
      // Rules granted through a RoleBinding carry their namespace; ClusterRole rules are
      // cluster-wide (so no roleNamespace is passed to rulesAllowing).
      const rules = loadRbacRules(serviceAccount, undefined, RECOVERY_NAMESPACE);
      const calls = system.proxy.callsMatching({ clientTag: tag });
      const denied = calls
        .filter((c) => rulesAllowing(rules, requestOf(c)).length === 0)
        .map((c) => `${c.verb} ${c.path}`);
      expect(denied, `${tag}: calls its role does not allow`).toEqual([]);
      // Enforced, not only inferred: the API server refused none of them.
      const refused = calls
        .filter((c) => c.upstreamStatus === 401 || c.upstreamStatus === 403)
        .map((c) => `${c.upstreamStatus} ${c.verb} ${c.path}`);
      expect(refused, `${tag}: calls the API server refused`).toEqual([]);
      const unused = rules
        .filter((rule) => !calls.some((c) => rulesAllowing(rules, requestOf(c)).includes(rule)))
        .map(describeRule);
      expect(unused, `${tag}: rules no call used`).toEqual([]);
      // Finer than the rule check, for information: verbs a used rule grants but no call needed.
      for (const rule of rules) {
        const idle = rule.verbs.filter(
          (verb) =>
            !calls.some(
              (c) => c.verb === verb && rulesAllowing(rules, requestOf(c)).includes(rule),
            ),
        );
        if (idle.length > 0)
          notes.push(`  ${tag}: ${describeRule(rule)}: unused verbs ${idle.join(',')}`);
      }
      const counters = system.proxy.counters({ clientTag: tag });
      for (const [what, n] of Object.entries(counters).sort()) {
        rows.push(`  ${tag.padEnd(16)} ${what.padEnd(40)} ${String(n).padStart(5)}`);
      }
      if (calls.length === 0) rows.push(`  ${tag.padEnd(16)} (no API calls)`);
    }
    // dead-letter never talks to Kubernetes and holds no rule.
    expect(loadRbacRules('dead-letter')).toEqual([]);
    expect(system.proxy.count({ clientTag: 'dead-letter' })).toBe(0);
    // Every call came from a known client (catch-up: the emulation's own lists when it settles,
    // test/harness/knative/list-watch.ts; no product identity).
    const known = new Set([...CLIENTS.map(([t]) => t), 'pingsource', 'source-watcher', 'catch-up']);
    expect(system.proxy.calls.filter((c) => !known.has(c.clientTag))).toEqual([]);

    console.log(
      `[e2e] API calls per client (apiserversource lists include the emulation's catch-up ` +
        `checks):\n${rows.join('\n')}\n[e2e] granted but unused by these flows:\n${notes.join('\n')}`,
    );
    report('rbac from behaviour', {
      calls: system.proxy.calls.length,
      resyncs: resyncs.length,
    });
  });
});
