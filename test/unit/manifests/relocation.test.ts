// Relocatable (issue 35, docs/adr/0063): an overlay that sets only `namespace:` moves the whole
// install. Every install entry point, rendered so, places every namespaced object in the new
// namespace and keeps no value that names the default one: not in the ConfigMap (no
// ALARM_NAMESPACE, no BROKER_URL), not in the Trigger filters (the PingSources' recoverytimer
// extension), not in the admission policies (their param is the install's Namespace).
// One exception, listed: the Triggers' `subscriber.audience`, inert unless sender authentication
// is on, and that component (knative/components/sender-auth) names the namespace in its EventPolicy
// `sub`s (Eventing matches `sub` with a trailing * only); its senders (RECOVERY_AUTH_SENDERS) are
// bare ServiceAccount names the functions qualify with their namespace (docs/adr/0068).

import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
import { BASE, CLUSTER_SCOPED, FLUX_ONLY, OBSERVE, OFF, recoveryConfig } from './renders.js';
import { senderAllowed } from '../../../shared/core/sender-auth.js';
import { toKnativeManifests } from '../../harness/knative/manifests.js';
import { oidcSubject, TRIGGER_GK } from '../../harness/knative/oidc-identity.js';
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

/** The one exception (see above): read by Eventing only with authentication-oidc on. */
const INERT_AUDIENCE = '.spec.subscriber.audience';

/** Values that name the default namespace, as `Kind/name path = value`. */
function namespaceValues(objects: readonly K8sObject[]): string[] {
  return objects.flatMap((o) =>
    strings(o, '')
      .filter(([at]) => !(CLUSTER_SCOPED.has(o.kind) && at === '.metadata.namespace'))
      .filter(([at]) => !(o.kind === 'Trigger' && at === INERT_AUDIENCE))
      .filter(([, v]) => NAMES_DEFAULT.test(v))
      .map(([at, v]) => `${o.kind}/${o.metadata.name} ${at} = ${v}`),
  );
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'swr-moved-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
cpSync(path.join(REPO_ROOT, 'knative'), path.join(tmp, 'knative'), { recursive: true });

/** An overlay of `entry` that sets only `namespace:`. */
function moved(entry: string): K8sObject[] {
  const dir = path.join(tmp, 'overlays-of', entry);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'kustomization.yaml'),
    `resources: [${path.relative(dir, path.join(tmp, entry))}]\nnamespace: ${MOVED}\n`,
  );
  return renderKustomize(dir);
}

describe.each([BASE, OBSERVE, FLUX_ONLY, OFF])('%s moved by `namespace:` alone', (entry) => {
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
  const objects = moved('knative/overlays/sender-auth');
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
