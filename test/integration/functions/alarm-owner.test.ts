// The follow-up alarm belongs to the install (docs/adr/0067): detect gives the recovery-alarm
// PingSource an ownerReference to the resync PingSource (its uid read from the real API server)
// and the install's labels, so the real garbage collector of the test cluster removes it when the
// install is deleted. Without a readable owner (absent, forbidden, a degraded API server) the alarm
// is still armed, without an owner, one warn line says why, and a later write adopts it.

import type { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ALARM_LABELS, PING_KIND } from '../../../shared/core/index.js';
import { customObjects } from '../../support/apiserver.js';
import { createAgWithStatus, stuckStatus } from '../../support/ag-states.js';
import { SettableClock } from '../../harness/functions.js';
import { agResourceEvent, postEvent } from '../../support/http-events.js';
import { findObject, renderKustomize, type K8sObject } from '../../support/manifests.js';
import { ALARM_NAME, ALARM_NAMESPACE, deleteAlarm } from '../../support/recovery-alarm.js';
import { capturingLogger, functionFile } from './suite-kit.js';

const { T0, kc, suite } = functionFile('detect-owner');

const PINGSOURCES = { group: 'sources.knative.dev', version: 'v1', plural: 'pingsources' } as const;
const OWNER_NOT_FOUND = 'alarm owner not found; alarm written without an owner';
const OWNER_UNREADABLE = 'alarm owner unreadable; alarm written without an owner';

interface RawPingSource {
  metadata: {
    uid: string;
    labels?: Record<string, string>;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
  };
}

/** The resync PingSource as the install renders it (knative/), the owner of the alarm. */
const RESYNC = findObject(renderKustomize('knative'), 'PingSource', 'resync');

const ps = (name: string) => ({ ...PINGSOURCES, namespace: ALARM_NAMESPACE, name });

async function readRaw(name: string): Promise<RawPingSource | null> {
  try {
    return (await customObjects(kc).getNamespacedCustomObject(ps(name))) as RawPingSource;
  } catch (e) {
    if ((e as { code?: number }).code === 404) return null;
    throw e;
  }
}

/** Applies the rendered resync PingSource (as `kubectl apply -k` would); returns its uid. */
async function applyResync(): Promise<string> {
  const body: K8sObject = { ...RESYNC, metadata: { ...RESYNC.metadata } };
  const created = (await customObjects(kc).createNamespacedCustomObject({
    ...PINGSOURCES,
    namespace: ALARM_NAMESPACE,
    body,
  })) as RawPingSource;
  return created.metadata.uid;
}

/** Deletes the resync PingSource as `kubectl delete -k` does (background propagation). */
async function deleteResync(client: KubeConfig = kc): Promise<void> {
  await customObjects(client)
    .deleteNamespacedCustomObject({ ...ps('resync'), propagationPolicy: 'Background' })
    .catch((e: unknown) => {
      if ((e as { code?: number }).code !== 404) throw e;
    });
}

async function until(what: string, timeoutMs: number, probe: () => Promise<boolean>) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** detect, its clock 10 s after T0, arms the alarm for an AG stuck since `since`. */
async function armFor(
  since: number,
  logger = capturingLogger('detect'),
  env: Record<string, string> = {},
) {
  const d = await suite.startDetect(new SettableClock(T0 + 10_000), { logger: logger.logger, env });
  const ag = await createAgWithStatus(kc, stuckStatus(since));
  expect((await postEvent(d.url, agResourceEvent(ag))).status).toBe(200);
  return { logs: logger.logs, d };
}

beforeEach(async () => {
  suite.proxy.clearFaults();
  await deleteAlarm(kc);
  await deleteResync();
  await until('no resync PingSource', 30_000, async () => (await readRaw('resync')) === null);
});
afterEach(async () => {
  suite.proxy.clearFaults();
  await deleteAlarm(kc);
  await deleteResync();
});

describe('the alarm belongs to the install', () => {
  it('is owned by the resync PingSource (uid from the API server) and carries the install labels', async () => {
    const uid = await applyResync();
    await armFor(T0);
    const alarm = await readRaw(ALARM_NAME);
    expect(alarm?.metadata.ownerReferences).toEqual([
      { apiVersion: 'sources.knative.dev/v1', kind: PING_KIND, name: 'resync', uid },
    ]);
    expect(alarm?.metadata.labels).toMatchObject(ALARM_LABELS);
    // The install's own label, as kustomize gives every object of knative/.
    expect(alarm?.metadata.labels?.['app.kubernetes.io/part-of']).toBe(
      RESYNC.metadata.labels?.['app.kubernetes.io/part-of'],
    );
  });

  it('the garbage collector removes the alarm when the install is deleted (kubectl delete -k)', async () => {
    await applyResync();
    await armFor(T0);
    expect(await readRaw(ALARM_NAME)).not.toBeNull();
    await deleteResync();
    // Nobody but kube-controller-manager's garbage collector deletes it.
    await until('the garbage collector removes the alarm', 60_000, async () => {
      return (await readRaw(ALARM_NAME)) === null;
    });
    expect(suite.proxy.count({ resource: 'pingsources', verb: 'delete', name: ALARM_NAME })).toBe(
      0,
    );
  });
});

describe('without a readable owner the alarm is still armed', () => {
  it('owner absent: armed without an owner, said once; adopted by a later write', async () => {
    const { logs, d } = await armFor(T0);
    const first = await readRaw(ALARM_NAME);
    expect(first).not.toBeNull();
    expect(first?.metadata.ownerReferences ?? []).toEqual([]);
    expect(first?.metadata.labels).toMatchObject(ALARM_LABELS);
    // An earlier due time moves the alarm: the same cause is not warned again (at debug).
    const again = await createAgWithStatus(kc, stuckStatus(T0 - 5_000));
    await postEvent(d.url, agResourceEvent(again));
    const warned = logs.records.filter((r) => r.msg === OWNER_NOT_FOUND);
    expect(warned.map((r) => r.level)).toEqual(['warn', 'debug']);
    expect(warned[0]).toMatchObject({ owner: `${ALARM_NAMESPACE}/resync`, error: 'NotFound' });
    // The install is applied again: the next write adopts the alarm.
    const uid = await applyResync();
    const earlier = await createAgWithStatus(kc, stuckStatus(T0 - 10_000));
    await postEvent(d.url, agResourceEvent(earlier));
    expect((await readRaw(ALARM_NAME))?.metadata.ownerReferences?.map((r) => r.uid)).toEqual([uid]);
  });

  it.each([
    // KUBE_REQUEST_TIMEOUT_MS 1 s: the held read times out at the client.
    ['a timeout', { kind: 'timeout' } as const],
    ['503', { kind: 'status', status: 503 } as const],
    ['403', { kind: 'status', status: 403 } as const],
  ])('owner read fails (%s): armed without an owner, one warn line', async (_n, fault) => {
    await applyResync();
    suite.proxy.addFault({
      ...fault,
      match: { clientTag: 'detect', resource: 'pingsources', verb: 'get', name: 'resync' },
    });
    const { logs } = await armFor(T0, capturingLogger('detect'), {
      KUBE_REQUEST_TIMEOUT_MS: '1000',
    });
    const alarm = await readRaw(ALARM_NAME);
    expect(alarm).not.toBeNull();
    expect(alarm?.metadata.ownerReferences ?? []).toEqual([]);
    const warned = logs.records.filter((r) => r.msg === OWNER_UNREADABLE);
    expect(warned).toHaveLength(1);
    expect(warned[0]?.level).toBe('warn');
  });
});
