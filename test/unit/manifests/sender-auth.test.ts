// knative/components/sender-auth (docs/adr/0056), as rendered by knative/overlays/sender-auth:
// the Broker's EventPolicy names exactly the senders the package ships, each function hears
// exactly the Triggers that route to it, and the audience the Triggers request is the one the
// functions check. The names are derived here the way Knative Eventing derives them.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadPodConfig } from '../../support/pod-config.js';
import {
  APISERVERSOURCE_GK,
  knativeChildName,
  oidcSubject,
  PINGSOURCE_GK,
  SINKBINDING_GK,
  TRIGGER_GK,
} from '../../harness/knative/oidc-identity.js';
import { toKnativeManifests } from '../../harness/knative/manifests.js';
import { resolveEventPolicy } from '../../harness/knative/event-policy.js';
import {
  findObject,
  isRecoveryConfig,
  objectsOfKind,
  RECOVERY_NAMESPACE,
  REPO_ROOT,
  renderKustomize,
  type K8sObject,
} from '../../support/manifests.js';
import { BASE, recoveryConfig } from './renders.js';

const SENDER_AUTH = 'knative/overlays/sender-auth';
const FOLLOW_NAMESPACE = 'knative/components/sender-auth/follow-namespace.yaml';
const NS = RECOVERY_NAMESPACE;

describe('knativeChildName is kmeta.ChildName (knative.dev/pkg test vectors)', () => {
  it.each([
    ['asdf', '-deployment', 'asdf-deployment'],
    [
      'f'.repeat(63),
      '-deployment',
      'ffffffffffffffffffff105d7597f637e83cc711605ac3ea4957-deployment',
    ],
    ['f'.repeat(63), '-deploy', 'ffffffffffffffffffffffff105d7597f637e83cc711605ac3ea4957-deploy'],
    [
      'f'.repeat(63),
      'f'.repeat(63),
      'fffffffffffffffffffffffffffffff0502661254f13c89973cb3a83e0cbec0',
    ],
    ['a', 'f'.repeat(63), 'ab5cfd486935decbc0d305799f4ce4414ffffffffffffffffffffffffffffff'],
    [
      'b'.repeat(32),
      'f'.repeat(32),
      'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb329c7c81b9ab3ba71aa139066aa5625d',
    ],
    ['aaaa', 'b---a'.repeat(20), 'aaaa7a3f7966594e3f0849720eced8212c18b---ab---ab---ab---ab---ab'],
    [
      'a'.repeat(17),
      'a.-.-.-.-.-.-.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      'aaaaaaaaaaaaaaaaaa1eb10dc911444f8434af83b7225442da',
    ],
  ])('%s + %s', (parent, suffix, want) => {
    expect(knativeChildName(parent, suffix)).toBe(want);
  });
});

describe('knative/overlays/sender-auth', () => {
  const objects = renderKustomize(SENDER_AUTH);
  const data = recoveryConfig(objects);
  const triggers = toKnativeManifests(objects, NS).triggers;
  const services = objectsOfKind(objects, 'Service').filter(
    (o) => o.apiVersion === 'serving.knative.dev/v1',
  );
  const envOf = (svc: K8sObject): Record<string, string> => {
    const c = (
      svc.spec as {
        template: { spec: { containers: { env?: { name: string; value: string }[] }[] } };
      }
    ).template.spec.containers[0];
    return Object.fromEntries((c?.env ?? []).map((e) => [e.name, e.value]));
  };

  it('turns RECOVERY_AUTH on; the base leaves it off', () => {
    expect(data.RECOVERY_AUTH).toBe('oidc');
    expect(recoveryConfig(renderKustomize(BASE)).RECOVERY_AUTH).toBe('off');
  });

  it('is the base plus the EventPolicy, the config switch and the senders of each Service', () => {
    const base = renderKustomize(BASE);
    // recovery-config by its base name: its hash differs with RECOVERY_AUTH (docs/adr/0064).
    const key = (o: K8sObject): string =>
      `${o.kind}/${isRecoveryConfig(o) ? 'recovery-config' : o.metadata.name}`;
    expect(objects.map(key).sort()).toEqual(
      [...base.map(key), 'EventPolicy/broker-senders'].sort(),
    );
    for (const o of objects) {
      if (o.kind === 'EventPolicy' || o.kind === 'ConfigMap' || o.kind === 'Service') continue;
      expect(o, key(o)).toEqual(base.find((b) => key(b) === key(o)));
    }
  });

  it.each(['detect', 'force-drift', 'surface-stalled', 'heal-external-artifacts'])(
    "%s is the base's Service plus RECOVERY_AUTH_SENDERS (its own env kept)",
    (name) => {
      const svc = structuredClone(findObject(objects, 'Service', name, 'serving.knative.dev'));
      const base = findObject(renderKustomize(BASE), 'Service', name, 'serving.knative.dev');
      type Env = { name: string }[];
      const c = (o: K8sObject) =>
        (o.spec as { template: { spec: { containers: { env?: Env; envFrom?: unknown }[] } } })
          .template.spec.containers[0]!;
      const env = c(svc).env ?? [];
      expect(env.map((e) => e.name)).toEqual([
        ...(c(base).env ?? []).map((e) => e.name),
        'RECOVERY_AUTH_SENDERS',
      ]);
      // What remains differs only by the name of the recovery-config it reads (its data differ).
      c(svc).env = env.filter((e) => e.name !== 'RECOVERY_AUTH_SENDERS');
      if (c(svc).env?.length === 0) delete c(svc).env;
      c(svc).envFrom = c(base).envFrom;
      expect(svc).toEqual(base);
    },
  );

  it.each(['detect', 'force-drift', 'surface-stalled', 'heal-external-artifacts'])(
    '%s hears exactly its own Triggers, for the audience they request',
    (name) => {
      const svc = services.find((s) => s.metadata.name === name);
      expect(svc, name).toBeDefined();
      const own = triggers.filter((t) => t.subscriber.service === name);
      expect(own.length).toBeGreaterThan(0);
      const config = loadPodConfig({ ...data, ...envOf(svc as K8sObject), K_SERVICE: name });
      expect(config.auth.mode).toBe('oidc');
      expect([...config.auth.allowedSenders].sort()).toEqual(
        own.map((t) => oidcSubject(NS, ...TRIGGER_GK, t.name)).sort(),
      );
      for (const t of own) expect(t.subscriber.audience, t.name).toBe(config.auth.audience);
    },
  );

  it('dead-letter checks no token (it holds none to ask with): no senders, no audience asked', () => {
    const svc = services.find((s) => s.metadata.name === 'dead-letter') as K8sObject;
    expect(envOf(svc)).toEqual({});
    for (const t of triggers) expect(t.delivery.deadLetterSink?.audience).toBeUndefined();
  });

  it("the Broker's EventPolicy names exactly the shipped sources and detect's SinkBinding", () => {
    const policy = findObject(objects, 'EventPolicy', 'broker-senders');
    expect(policy.apiVersion).toBe('eventing.knative.dev/v1alpha1');
    const spec = policy.spec as {
      to: unknown[];
      from: { sub?: string; ref?: { kind: string; name: string; namespace?: string } }[];
    };
    expect(spec.to).toEqual([
      {
        ref: {
          apiVersion: 'eventing.knative.dev/v1',
          kind: 'Broker',
          name: data.ALARM_SINK_BROKER,
        },
      },
    ]);
    const expected = [
      ...objectsOfKind(objects, 'ApiServerSource').map((o) =>
        oidcSubject(NS, ...APISERVERSOURCE_GK, o.metadata.name),
      ),
      ...objectsOfKind(objects, 'PingSource').map((o) =>
        oidcSubject(NS, ...PINGSOURCE_GK, o.metadata.name),
      ),
      // The alarm detect creates at run time.
      oidcSubject(NS, ...PINGSOURCE_GK, data.ALARM_NAME as string),
      ...objectsOfKind(objects, 'SinkBinding').map((o) =>
        oidcSubject(NS, ...SINKBINDING_GK, o.metadata.name),
      ),
    ];
    // As Eventing resolves it: every ref names an object of the install (else the policy and the
    // Broker are not Ready), and the subjects are exactly the senders.
    const resolved = resolveEventPolicy(policy, objects);
    expect(resolved.unresolved).toEqual([]);
    expect([...resolved.subjects].sort()).toEqual(expected.sort());
    // By ref (ADR 68): the senders that always exist, with no namespace (the policy's is theirs).
    // By sub: the two that may be absent, the alarm and heal-external-artifacts' source, at the
    // places follow-namespace.yaml re-points.
    expect(spec.from.filter((f) => f.ref !== undefined).map((f) => f.ref?.name)).toEqual([
      'artifactgenerators',
      data.RESYNC_PINGSOURCE,
      'detect',
    ]);
    for (const f of spec.from) expect(f.ref?.namespace, JSON.stringify(f)).toBeUndefined();
    expect(spec.from.slice(3).map((f) => f.sub)).toEqual([
      oidcSubject(NS, ...APISERVERSOURCE_GK, 'externalartifacts'),
      oidcSubject(NS, ...PINGSOURCE_GK, data.ALARM_NAME as string),
    ]);
    expect(spec.from).toHaveLength(5);
    // follow-namespace.yaml re-points exactly the subs, in the namespace part.
    const follow = parse(readFileSync(path.join(REPO_ROOT, FOLLOW_NAMESPACE), 'utf8')) as {
      source: { kind: string; name: string; fieldPath: string };
      targets: { select: unknown; fieldPaths: string[]; options: unknown }[];
    }[];
    expect(follow).toEqual([
      {
        source: { kind: 'EventPolicy', name: 'broker-senders', fieldPath: 'metadata.namespace' },
        targets: [
          {
            select: { kind: 'EventPolicy', name: 'broker-senders' },
            fieldPaths: spec.from.flatMap((f, i) =>
              f.sub !== undefined ? [`spec.from.${i}.sub`] : [],
            ),
            options: { delimiter: ':', index: 2 },
          },
        ],
      },
    ]);
    // Every source and the SinkBinding sink into that Broker.
    for (const kind of ['ApiServerSource', 'PingSource', 'SinkBinding']) {
      for (const o of objectsOfKind(objects, kind)) {
        expect((o.spec as { sink: { ref: { name: string } } }).sink.ref.name).toBe('default');
      }
    }
  });
});
