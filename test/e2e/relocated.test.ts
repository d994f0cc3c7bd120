// End-to-end: the install rendered into another namespace by an overlay that sets only
// `namespace:` (test/relocated, issue 35, docs/adr/0063). Its identities are created in that
// namespace as the render has them, the functions run there (as pods would: POD_NAMESPACE), and
// the Knative emulation routes by the render's Triggers, Broker and PingSources. A lost Ready write
// under the time rule is forced by the follow-up alarm detect creates in the moved namespace (the
// detect-alarm Trigger matches it by its recoverytimer extension, whatever the namespace), the
// resync PingSource of the moved namespace reaches detect and surface-stalled, and nothing is
// written in the default namespace. With sender authentication on (test/relocated/sender-auth:
// the sender-auth overlay moved the same way, with follow-namespace.yaml, docs/adr/0068), the same
// recovery runs through the emulated Broker with every delivery carrying a real TokenRequest token
// of a moved Trigger for the function's audience (which names no namespace), each checked by the
// function's TokenReview; and a function of the moved install refuses the same Trigger of the
// default namespace (403). The emulated ingress does not enforce the EventPolicy (ADR 56).

import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PING,
  TIMER_ALARM,
  TIMER_EXTENSION,
  TIMER_RESYNC,
} from '../../shared/core/objects/cloudevent-types.js';
import { toKnativeManifests } from '../harness/knative/manifests.js';
import { pingEventSource } from '../harness/knative/ping-scheduler.js';
import { deleteAlarm, readAlarm } from '../harness/system/world.js';
import {
  identityObjects,
  requestToken,
  SERVICE_ACCOUNTS,
  type ServiceAccountName,
  type ServiceAccountTokens,
} from '../setup/cluster-rbac.js';
import { functionAudience } from '../../shared/core/access/sender-auth.js';
import { SettableClock, startFunction } from '../harness/functions.js';
import { OidcTokenProvider, type OidcSender } from '../harness/knative/index.js';
import { TRIGGER_GK } from '../harness/knative/oidc-identity.js';
import { cloudEvent, type Answer } from '../support/http-events.js';
import { withToken } from '../support/identities.js';
import {
  findRecoveryConfig,
  RECOVERY_NAMESPACE,
  renderKustomize,
  type K8sObject,
} from '../support/manifests.js';
import {
  MINUTE,
  agReady,
  createPair,
  kc,
  psReady,
  report,
  seconds,
  startSystem,
  trackingCleared,
  readAg,
} from './scenario-kit.js';

const RELOCATED = 'test/relocated';
const MOVED = 'cozy-source-watcher-recovery';
/** Names of the moved ClusterRoleBindings: the test world's install holds the rendered ones. */
const bindingName = (name: string): string => `${name}-moved`;

const rendered = renderKustomize(RELOCATED);
/** The same room with sender authentication: the sender-auth overlay moved by `namespace:` alone. */
const RELOCATED_SENDER_AUTH = 'test/relocated/sender-auth';
let tokens: ServiceAccountTokens;
const created: K8sObject[] = [];

/** The render's identities, as an install in MOVED has them, next to the test world's install. */
async function installMovedIdentities(): Promise<ServiceAccountTokens> {
  const api = k8s.KubernetesObjectApi.makeApiClient(kc);
  for (const o of identityObjects(RELOCATED)) {
    // The ClusterRoles are the test world's install's, rule for rule (the same package).
    if (o.kind === 'ClusterRole') continue;
    const object =
      o.kind === 'ClusterRoleBinding'
        ? { ...o, metadata: { ...o.metadata, name: bindingName(o.metadata.name) } }
        : o;
    await api.create(object as k8s.KubernetesObject);
    created.push(object);
  }
  const out = {} as Record<ServiceAccountName, string>;
  for (const sa of SERVICE_ACCOUNTS) out[sa] = await requestToken(kc, sa, MOVED);
  return out;
}

beforeAll(async () => {
  tokens = await installMovedIdentities();
});

afterAll(async () => {
  await deleteAlarm(kc, MOVED);
  const api = k8s.KubernetesObjectApi.makeApiClient(kc);
  for (const o of created.reverse()) {
    if (o.kind === 'ClusterRoleBinding' || o.kind === 'Namespace') {
      await api.delete(o as k8s.KubernetesObject).catch(() => undefined);
    }
  }
});

describe('e2e: an install moved to another namespace by `namespace:` alone', () => {
  it('forces a lost Ready write through its own alarm, sweeps on its own resync, writes nothing in the default namespace', async () => {
    const system = await startSystem({
      env: { RECOVERY_EARLY_DETECTION: 'off', RECOVERY_GRACE_PERIOD: '30s' },
      serviceAccountTokens: tokens,
      install: { namespace: MOVED, manifests: toKnativeManifests(rendered) },
    });
    const pair = await createPair(system, { lose: { times: 1 } });
    await system.runUntil(() => system.progress.of(pair.key).recoveries.length > 0, {
      maxVirtualMs: 3 * MINUTE,
      what: 'recovery through the alarm',
    });
    // Past the next 5-minute tick of the resync PingSource.
    await system.advance(6 * MINUTE);

    const p = system.progress.of(pair.key);
    expect(p.forces.map((f) => f.attempt)).toEqual([1]);
    expect(await agReady(pair.ref)).toMatchObject({ status: 'True', reason: 'Succeeded' });
    expect(trackingCleared(await readAg(pair.ref))).toBe(true);
    expect(await psReady(pair.name)).toMatchObject({ status: 'True', reason: 'Succeeded' });

    // The alarm was detect's, in the moved namespace; it reached detect by its extension.
    const ok = (trigger: string) =>
      system.knative.broker.deliveriesTo(trigger).filter((d) => d.outcome === 'delivered');
    const alarms = ok('detect-alarm');
    expect(alarms.length).toBeGreaterThan(0);
    for (const d of alarms) {
      expect(d.event.source).toBe(pingEventSource(MOVED, 'recovery-alarm'));
      expect(d.event[TIMER_EXTENSION]).toBe(TIMER_ALARM);
    }
    // The moved resync reached both of its Triggers.
    for (const trigger of ['detect-resync', 'surface-stalled-resync']) {
      const resyncs = ok(trigger);
      expect(resyncs.length, trigger).toBeGreaterThan(0);
      for (const d of resyncs) {
        expect(d.event.source).toBe(pingEventSource(MOVED, 'resync'));
        expect(d.event[TIMER_EXTENSION]).toBe(TIMER_RESYNC);
      }
    }
    // Nothing in the default namespace: no alarm there, and no call of a function went there.
    expect(await readAlarm(kc, RECOVERY_NAMESPACE)).toBeUndefined();
    const inDefault = system.proxy.calls.filter((c) =>
      c.path.includes(`/namespaces/${RECOVERY_NAMESPACE}/`),
    );
    expect(inDefault.map((c) => `${c.method} ${c.path}`)).toEqual([]);

    report('moved install', {
      namespace: MOVED,
      alarmDeliveries: alarms.length,
      firstForceAfterStall: seconds((p.forces[0]?.claimedAt ?? NaN) - (p.stalls[0] ?? NaN)),
    });
  });
});

/** A Service's container env in a render. */
function serviceEnv(objects: readonly K8sObject[], name: string): Record<string, string> {
  const svc = objects.find(
    (o) =>
      o.kind === 'Service' && o.apiVersion === 'serving.knative.dev/v1' && o.metadata.name === name,
  ) as unknown as {
    spec: { template: { spec: { containers: { env?: { name: string; value: string }[] }[] } } };
  };
  const env = svc.spec.template.spec.containers[0]?.env ?? [];
  return Object.fromEntries(env.map((e) => [e.name, e.value]));
}

/** A resync ping as the moved resync PingSource sends it, with `token` (when given). */
async function postPing(url: string, token: string): Promise<Answer> {
  const { HTTP } = await import('cloudevents');
  const message = HTTP.binary(
    cloudEvent({
      type: PING,
      source: pingEventSource(MOVED, 'resync'),
      data: { purpose: 'resync' },
      extensions: { [TIMER_EXTENSION]: TIMER_RESYNC },
    }),
  );
  const headers = {
    ...(message.headers as Record<string, string>),
    authorization: `Bearer ${token}`,
  };
  const res = await fetch(url, { method: 'POST', headers, body: String(message.body) });
  return {
    status: res.status,
    body: JSON.parse(await res.text()) as unknown,
    headers: res.headers,
  };
}

describe('e2e: the moved install with sender authentication on, through the Broker', () => {
  it('recovers a lost Ready write through its own alarm with every delivery authenticated', async () => {
    const senderAuth = renderKustomize(RELOCATED_SENDER_AUTH);
    const manifests = toKnativeManifests(senderAuth);
    // The Triggers ask for the function's audience, which names no namespace (ADR 68).
    for (const t of manifests.triggers) {
      expect(t.subscriber.audience, t.name).toBe(functionAudience(t.subscriber.service));
    }
    const system = await startSystem({
      oidc: true,
      env: {
        ...findRecoveryConfig(senderAuth).data,
        RECOVERY_EARLY_DETECTION: 'off',
        RECOVERY_GRACE_PERIOD: '30s',
      },
      envOf: (name) => serviceEnv(senderAuth, name),
      serviceAccountTokens: tokens,
      install: { namespace: MOVED, manifests },
    });
    const pair = await createPair(system, { lose: { times: 1 } });
    await system.runUntil(() => system.progress.of(pair.key).recoveries.length > 0, {
      maxVirtualMs: 3 * MINUTE,
      what: 'recovery through the alarm, sender-authenticated',
    });
    await system.advance(6 * MINUTE);

    expect(system.progress.of(pair.key).forces.map((f) => f.attempt)).toEqual([1]);
    expect(await agReady(pair.ref)).toMatchObject({ status: 'True', reason: 'Succeeded' });
    expect(await psReady(pair.name)).toMatchObject({ status: 'True', reason: 'Succeeded' });

    // Every delivery carried a token of a moved Trigger, and its function heard it.
    const broker = system.knative.broker;
    const refused = broker.deliveries.filter((d) => d.status === 401 || d.status === 403);
    expect(refused.map((d) => `${d.trigger} ${d.status}`)).toEqual([]);
    for (const trigger of [
      'detect-alarm',
      'detect-resync',
      'surface-stalled-resync',
      'force-drift-force',
    ]) {
      const ok = broker.deliveriesTo(trigger).filter((d) => d.outcome === 'delivered');
      expect(ok.length, trigger).toBeGreaterThan(0);
      expect(
        ok.every((d) => d.token !== undefined),
        trigger,
      ).toBe(true);
    }
    for (const fn of ['detect', 'force-drift', 'surface-stalled'] as const) {
      const reviews = system.proxy.callsMatching({ clientTag: fn, resource: 'tokenreviews' });
      expect(reviews.length, fn).toBeGreaterThan(0);
      expect(
        reviews.every((c) => c.status === 201),
        fn,
      ).toBe(true);
    }
    expect(await readAlarm(kc, RECOVERY_NAMESPACE)).toBeUndefined();
    report('moved sender-auth through the Broker', {
      namespace: MOVED,
      deliveries: broker.deliveries.length,
      refused: refused.length,
    });
  });
});

describe('e2e: the moved install with sender authentication on, one function', () => {
  it("hears its own Triggers' identities in the moved namespace, refuses the default namespace's", async () => {
    const senderAuth = renderKustomize(RELOCATED_SENDER_AUTH);
    const env: Record<string, string> = {
      ...findRecoveryConfig(senderAuth).data,
      ...serviceEnv(senderAuth, 'surface-stalled'),
      K_SERVICE: 'surface-stalled',
      POD_NAMESPACE: MOVED,
      LOG_LEVEL: 'silent',
    };
    expect(env.RECOVERY_AUTH).toBe('oidc');
    const fn = await startFunction({
      fn: 'surface-stalled',
      kubeConfig: withToken(kc, tokens['surface-stalled']),
      clock: new SettableClock(Date.parse('2026-01-01T00:00:00Z')),
      env,
    });
    try {
      const audience = functionAudience('surface-stalled');
      expect(fn.config.auth.audience).toBe(audience);
      const resync: OidcSender = {
        group: TRIGGER_GK[0],
        kind: TRIGGER_GK[1],
        name: 'surface-stalled-resync',
      };
      // Eventing's identity of the Trigger in each namespace (made as Eventing makes it).
      const moved = new OidcTokenProvider({ kubeConfig: kc, namespace: MOVED });
      const stale = new OidcTokenProvider({ kubeConfig: kc, namespace: RECOVERY_NAMESPACE });

      const own = await postPing(fn.url, await moved.tokenFor(resync, audience));
      expect(own.status, JSON.stringify(own.body)).toBe(200);
      const old = await postPing(fn.url, await stale.tokenFor(resync, audience));
      expect(old).toMatchObject({ status: 403, body: { error: 'sender not allowed' } });
      report('moved sender-auth', { own: own.status, defaultNamespace: old.status });
    } finally {
      await fn.close();
    }
  });
});
