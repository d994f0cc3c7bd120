// Relocatable (issue 35, docs/adr/0063): an overlay that sets only `namespace:` moves the whole
// install. Every install entry point, rendered so, places every namespaced object in the new
// namespace and keeps no value that names the default one: not in the ConfigMap (no
// ALARM_NAMESPACE, no BROKER_URL), not in the Trigger filters (the PingSources' recoverytimer
// extension), not in the admission policies (their param is the install's Namespace).
// Sender authentication too (docs/adr/0068): the Triggers' `subscriber.audience` names the
// function, not the namespace; the Broker's EventPolicy names the senders that always exist by
// `ref` (its namespace defaults to the policy's); its senders (RECOVERY_AUTH_SENDERS) are bare
// ServiceAccount names the functions qualify with their namespace. The one thing a moved overlay
// adds: knative/components/sender-auth/follow-namespace.yaml, for the policy's two `sub`s (the
// senders that may not exist); without it exactly those two name the default namespace.

import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  findObject,
  renderKustomize,
  RECOVERY_NAMESPACE,
  REPO_ROOT,
  type K8sObject,
} from '../../support/manifests.js';
import { CLUSTER_SCOPED, ENTRY_POINTS, recoveryConfig } from './renders.js';
import { senderAllowed } from '../../../shared/core/access/sender-auth.js';
import { toKnativeManifests } from '../../harness/knative/manifests.js';
import {
  APISERVERSOURCE_GK,
  oidcSubject,
  PINGSOURCE_GK,
  SINKBINDING_GK,
  TRIGGER_GK,
} from '../../harness/knative/oidc-identity.js';
import { resolveEventPolicy } from '../../harness/knative/event-policy.js';
import { loadPodConfig } from '../../support/pod-config.js';

/** A Knative Service's container env, as a map. */
function serviceEnv(svc: K8sObject): Record<string, string> {
  const spec = svc.spec as {
    template: { spec: { containers: { env?: { name: string; value: string }[] }[] } };
  };
  const env = spec.template.spec.containers[0]?.env ?? [];
  return Object.fromEntries(env.map((e) => [e.name, e.value]));
}

const MOVED = 'cozy-source-watcher-recovery';
/** The default namespace as a whole word: not inside source-watcher-recovery-detect and the like. */
const NAMES_DEFAULT = new RegExp(`(?<![\\w.-])${RECOVERY_NAMESPACE}(?![\\w.-])`);

/** Every string in an object with its path, but the label values and images (the product's name). */
function strings(value: unknown, at: string, out: [string, string][] = []): [string, string][] {
  if (typeof value === 'string') out.push([at, value]);
  else if (Array.isArray(value)) value.forEach((v, i) => strings(v, `${at}[${i}]`, out));
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === 'labels' || k === 'matchLabels' || (k === 'image' && typeof v === 'string'))
        continue;
      strings(v, `${at}.${k}`, out);
    }
  }
  return out;
}

/** Values that name the default namespace, as `Kind/name path = value`. */
function namespaceValues(objects: readonly K8sObject[]): string[] {
  return objects.flatMap((o) =>
    strings(o, '')
      .filter(([at]) => !(CLUSTER_SCOPED.has(o.kind) && at === '.metadata.namespace'))
      .filter(([, v]) => NAMES_DEFAULT.test(v))
      .map(([at, v]) => `${o.kind}/${o.metadata.name} ${at} = ${v}`),
  );
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'swr-moved-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
cpSync(path.join(REPO_ROOT, 'knative'), path.join(tmp, 'knative'), { recursive: true });

const SENDER_AUTH = 'knative/overlays/sender-auth';
/** What a moved sender-authenticated install adds to its overlay (docs/operations.md). */
const FOLLOW_NAMESPACE = 'knative/components/sender-auth/follow-namespace.yaml';

/**
 * An overlay of `entry` that sets only `namespace:`, and for sender-auth (`follow`) lists a copy
 * of follow-namespace.yaml as a user's overlay does.
 */
function moved(entry: string, follow = entry === SENDER_AUTH): K8sObject[] {
  const dir = path.join(tmp, follow ? 'following-overlays-of' : 'overlays-of', entry);
  mkdirSync(dir, { recursive: true });
  let k = `resources: [${path.relative(dir, path.join(tmp, entry))}]\nnamespace: ${MOVED}\n`;
  if (follow) {
    writeFileSync(
      path.join(dir, 'follow-namespace.yaml'),
      readFileSync(path.join(REPO_ROOT, FOLLOW_NAMESPACE)),
    );
    k += 'replacements:\n  - path: follow-namespace.yaml\n';
  }
  writeFileSync(path.join(dir, 'kustomization.yaml'), k);
  return renderKustomize(dir);
}

/**
 * Every entry point but overlays/scoped, whose RoleBindings live in the watched namespaces (a
 * `namespace:` over it puts them all in one, which kustomize refuses: ADR 63).
 */
const MOVABLE = ENTRY_POINTS.filter((e) => e !== 'knative/overlays/scoped');

it('moves every entry point but overlays/scoped, sender-auth included', () => {
  expect(MOVABLE).toContain(SENDER_AUTH);
  expect(MOVABLE.length).toBe(ENTRY_POINTS.length - 1);
});

describe.each(MOVABLE)('%s moved by `namespace:` alone', (entry) => {
  // kustomize renders a fresh copy (nothing cached): slow on a busy machine.
  const objects = moved(entry);

  it('names the default namespace nowhere', { timeout: 60_000 }, () => {
    expect(namespaceValues(objects)).toEqual([]);
  });

  it('places every namespaced object, and the install Namespace, in the new one', () => {
    for (const o of objects) {
      if (!CLUSTER_SCOPED.has(o.kind)) {
        expect(o.metadata.namespace, `${o.kind}/${o.metadata.name}`).toBe(MOVED);
      }
    }
    const ns = findObject(objects, 'Namespace', MOVED);
    expect(ns.metadata.labels?.['source-watcher-recovery.cozystack.io/install']).toBe('true');
    // The ServiceAccounts the cluster roles are bound to moved too.
    for (const b of objects.filter((o) => o.kind === 'ClusterRoleBinding')) {
      for (const s of (b['subjects'] ?? []) as { kind: string; namespace?: string }[]) {
        if (s.kind === 'ServiceAccount') expect(s.namespace, b.metadata.name).toBe(MOVED);
      }
    }
    expect(recoveryConfig(objects)).not.toHaveProperty('ALARM_NAMESPACE');
    expect(recoveryConfig(objects)).not.toHaveProperty('BROKER_URL');
  });
});

// Sender authentication moved (docs/adr/0068): every Service's RECOVERY_AUTH_SENDERS names no
// namespace; loaded in the moved namespace it is exactly the moved Triggers' identities.
describe('knative/overlays/sender-auth moved by `namespace:` alone', () => {
  const objects = moved(SENDER_AUTH);
  const data = recoveryConfig(objects);
  const triggers = toKnativeManifests(objects, MOVED).triggers;
  const services = objects.filter(
    (o) => o.kind === 'Service' && o.apiVersion === 'serving.knative.dev/v1',
  );

  it.each(['detect', 'force-drift', 'surface-stalled', 'heal-external-artifacts'])(
    '%s hears its own Triggers in the moved namespace, none of the default one',
    { timeout: 60_000 },
    (name) => {
      const svc = services.find((o) => o.metadata.name === name) as K8sObject;
      const env = serviceEnv(svc);
      expect(env.RECOVERY_AUTH_SENDERS, name).toBeDefined();
      expect(env.RECOVERY_AUTH_SENDERS).not.toMatch(NAMES_DEFAULT);
      const config = loadPodConfig({ ...data, ...env, K_SERVICE: name }, MOVED);
      const own = triggers.filter((t) => t.subscriber.service === name);
      expect(own.length).toBeGreaterThan(0);
      expect([...config.auth.allowedSenders].sort()).toEqual(
        own.map((t) => oidcSubject(MOVED, ...TRIGGER_GK, t.name)).sort(),
      );
      for (const t of own) {
        expect(
          senderAllowed(oidcSubject(MOVED, ...TRIGGER_GK, t.name), config.auth.allowedSenders),
        ).toBe(true);
        expect(
          senderAllowed(
            oidcSubject(RECOVERY_NAMESPACE, ...TRIGGER_GK, t.name),
            config.auth.allowedSenders,
          ),
          'the same Trigger of the default namespace',
        ).toBe(false);
      }
    },
  );
});

// The Broker's EventPolicy moved (ADR 68): as Eventing resolves it in the moved namespace, every
// ref names a moved object (the policy and the Broker are Ready) and every subject is a moved
// sender; without follow-namespace.yaml exactly its two subs still name the default namespace.
describe('the Broker EventPolicy of knative/overlays/sender-auth moved', () => {
  const following = moved(SENDER_AUTH);
  const policy = findObject(following, 'EventPolicy', 'broker-senders');

  it('resolves to the moved senders only, every ref found', () => {
    const resolved = resolveEventPolicy(policy, following);
    expect(resolved.unresolved).toEqual([]);
    const data = recoveryConfig(following);
    expect([...resolved.subjects].sort()).toEqual(
      [
        oidcSubject(MOVED, ...APISERVERSOURCE_GK, 'artifactgenerators'),
        oidcSubject(MOVED, ...APISERVERSOURCE_GK, 'externalartifacts'),
        oidcSubject(MOVED, ...PINGSOURCE_GK, data.RESYNC_PINGSOURCE as string),
        oidcSubject(MOVED, ...PINGSOURCE_GK, data.ALARM_NAME as string),
        oidcSubject(MOVED, ...SINKBINDING_GK, 'detect'),
      ].sort(),
    );
  });

  it('without follow-namespace.yaml, only the two subs name the default namespace', () => {
    expect(namespaceValues(moved(SENDER_AUTH, false))).toEqual([
      `EventPolicy/broker-senders .spec.from[3].sub = ${oidcSubject(RECOVERY_NAMESPACE, ...APISERVERSOURCE_GK, 'externalartifacts')}`,
      `EventPolicy/broker-senders .spec.from[4].sub = ${oidcSubject(RECOVERY_NAMESPACE, ...PINGSOURCE_GK, 'recovery-alarm')}`,
    ]);
  });

  it('test/relocated/sender-auth lists the same follow-namespace.yaml', () => {
    expect(
      readFileSync(
        path.join(REPO_ROOT, 'test/relocated/sender-auth/follow-namespace.yaml'),
        'utf8',
      ),
    ).toBe(readFileSync(path.join(REPO_ROOT, FOLLOW_NAMESPACE), 'utf8'));
    const relocated = findObject(
      renderKustomize('test/relocated/sender-auth'),
      'EventPolicy',
      'broker-senders',
    );
    expect(relocated.spec).toEqual(policy.spec);
  });
});

describe('the check can fail', () => {
  it('finds a value that names the default namespace', () => {
    const stale: K8sObject = {
      apiVersion: 'eventing.knative.dev/v1',
      kind: 'Trigger',
      metadata: { name: 't', namespace: MOVED, labels: { part: RECOVERY_NAMESPACE } },
      spec: { filter: { attributes: { source: `/apis/v1/namespaces/${RECOVERY_NAMESPACE}/x` } } },
    };
    expect(namespaceValues([stale])).toEqual([
      `Trigger/t .spec.filter.attributes.source = /apis/v1/namespaces/${RECOVERY_NAMESPACE}/x`,
    ]);
  });
});
