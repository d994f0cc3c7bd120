// PingSource lifecycle through the adapter against the real test API server: create, get, merge
// patch of the schedule, create twice, delete with and without a resourceVersion precondition.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeClient } from '../../shared/kube/client.js';
import { loadKubeConfig } from '../../shared/kube/config.js';
import { isKubeError } from '../../shared/kube/errors.js';
import type { PingSource } from '../../shared/kube/port.js';
import { ensureNamespace, testKubeconfigPath, uniqueName } from '../support/apiserver.js';
import { failureOf } from '../support/kube-failure.js';
import { systemClock } from '../../shared/runtime/clock.js';

const FIELD_MANAGER = 'adapter-ping-test';
// Loaded the way the functions load it: an explicit kubeconfig path.
const kubeConfig = loadKubeConfig({ kubeconfigPath: testKubeconfigPath() });
const kube = createKubeClient({ clock: systemClock, kubeConfig, fieldManager: FIELD_MANAGER });
const namespace = uniqueName('ping');
const created: string[] = [];

beforeAll(async () => {
  await ensureNamespace(namespace);
});

afterAll(async () => {
  for (const name of created) {
    await kube.deletePingSource(namespace, name).catch((err: unknown) => {
      if (!isKubeError(err, 'NotFound')) throw err;
    });
  }
});

function body(name: string, schedule = '0 * * * *'): PingSource {
  created.push(name);
  return {
    metadata: {
      name,
      labels: { app: 'adapter-test' },
      annotations: { due: '2025-01-01T00:00:00Z' },
    },
    spec: {
      schedule,
      timezone: 'UTC',
      contentType: 'application/json',
      data: '{"kind":"follow-up"}',
      sink: { uri: 'http://broker-ingress.example/ns/default' },
    },
  };
}

describe('PingSource lifecycle', () => {
  it('create returns the stored object; get reads it back', async () => {
    const name = uniqueName('p');
    const made = await kube.createPingSource(namespace, body(name, '30 2 * * *'));
    expect(made.apiVersion).toBe('sources.knative.dev/v1');
    expect(made.kind).toBe('PingSource');
    expect(made.metadata?.namespace).toBe(namespace);
    expect(made.metadata?.resourceVersion).toMatch(/^\d+$/);
    expect(made.metadata?.creationTimestamp).toBeDefined();
    const got = await kube.getPingSource(namespace, name);
    expect(got.metadata?.resourceVersion).toBe(made.metadata?.resourceVersion);
    expect(got.metadata?.labels).toEqual({ app: 'adapter-test' });
    expect(got.metadata?.annotations).toEqual({ due: '2025-01-01T00:00:00Z' });
    expect(got.spec).toMatchObject({
      schedule: '30 2 * * *',
      timezone: 'UTC',
      contentType: 'application/json',
      data: '{"kind":"follow-up"}',
    });
    // The CRD fixture keeps the sink as free-form (x-kubernetes-preserve-unknown-fields).
    expect(got.spec?.sink).toEqual({ uri: 'http://broker-ingress.example/ns/default' });
  });

  it('creating the same name twice -> ConflictError, the first one unchanged', async () => {
    const name = uniqueName('p');
    const first = await kube.createPingSource(namespace, body(name, '1 1 * * *'));
    const err = await failureOf(kube.createPingSource(namespace, body(name, '2 2 * * *')));
    expect(err.kind).toBe('Conflict');
    expect(err.statusCode).toBe(409);
    expect(err.message).toContain('AlreadyExists');
    const got = await kube.getPingSource(namespace, name);
    expect(got.spec?.schedule).toBe('1 1 * * *');
    expect(got.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);
  });

  it('merge-patches the schedule (with and without a precondition) and an annotation', async () => {
    const name = uniqueName('p');
    const made = await kube.createPingSource(namespace, body(name));
    const patched = await kube.patchPingSource(
      namespace,
      name,
      { spec: { schedule: '15 4 5 6 *' }, metadata: { annotations: { due: null, next: 'x' } } },
      { resourceVersion: made.metadata?.resourceVersion ?? '' },
    );
    expect(patched.spec?.schedule).toBe('15 4 5 6 *');
    expect(patched.spec?.data).toBe('{"kind":"follow-up"}');
    expect(patched.metadata?.annotations).toEqual({ next: 'x' });
    const again = await kube.patchPingSource(namespace, name, { spec: { schedule: '16 4 5 6 *' } });
    expect(again.spec?.schedule).toBe('16 4 5 6 *');
    const got = await kube.getPingSource(namespace, name);
    expect(got.spec?.schedule).toBe('16 4 5 6 *');
    expect(got.metadata?.annotations).toEqual({ next: 'x' });
  });

  it('deletes with a precondition: stale -> Conflict and kept; current -> gone; again -> NotFound', async () => {
    const name = uniqueName('p');
    const made = await kube.createPingSource(namespace, body(name));
    const stale = made.metadata?.resourceVersion ?? '';
    const bumped = await kube.patchPingSource(namespace, name, { spec: { schedule: '5 * * * *' } });
    const current = bumped.metadata?.resourceVersion ?? '';

    const conflict = await failureOf(
      kube.deletePingSource(namespace, name, { resourceVersion: stale }),
    );
    expect(conflict.kind).toBe('Conflict');
    expect((await kube.getPingSource(namespace, name)).metadata?.resourceVersion).toBe(current);

    await kube.deletePingSource(namespace, name, { resourceVersion: current });
    expect((await failureOf(kube.getPingSource(namespace, name))).kind).toBe('NotFound');
    expect((await failureOf(kube.deletePingSource(namespace, name))).kind).toBe('NotFound');
  });

  it('deletes without a precondition', async () => {
    const name = uniqueName('p');
    await kube.createPingSource(namespace, body(name));
    await kube.deletePingSource(namespace, name);
    expect((await failureOf(kube.getPingSource(namespace, name))).kind).toBe('NotFound');
  });
});
