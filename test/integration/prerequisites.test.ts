// The start-up prerequisite check (shared/runtime/prerequisites.ts) on the real kube-apiserver,
// each function as its own ServiceAccount through the recording, faulting proxy: with every CRD
// installed it says `prerequisites served`; with the PackageSource CRD deleted (its whole group
// goes) and the ExternalArtifact CRD deleted (its group stays, serving GitRepository and the
// rest), the functions that need them say `prerequisite API not served` once, with the missing
// ones, and write a Warning Event the API server keeps; a degraded API server (a timeout, 503,
// 429) leaves the answer `unknown`, read again later, and never throws. The CRDs are put back.

import * as k8s from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  API_NEEDS,
  describeNeed,
  EVENT_REASON_PREREQUISITE_MISSING,
} from '../../shared/core/access/prerequisites.js';
import { checkPrerequisites } from '../../shared/runtime/prerequisites.js';
import { createLogger } from '../../shared/runtime/logger.js';
import { LogCapture } from '../harness/system/log-capture.js';
import { functionKubeClient, testConfig } from '../harness/functions.js';
import { systemClock } from '../../shared/runtime/clock.js';
import { asFunction } from '../support/identities.js';
import { installCrds } from '../setup/install-crds.js';
import { testKubeConfig } from '../support/apiserver.js';
import { startKubeProxy, type KubeProxy } from '../support/kube-proxy.js';
import { RECOVERY_NAMESPACE } from '../support/manifests.js';

const admin = testKubeConfig();
const ext = admin.makeApiClient(k8s.ApiextensionsV1Api);
const FUNCTIONS = ['detect', 'force-drift', 'surface-stalled', 'heal-external-artifacts'] as const;
type Fn = (typeof FUNCTIONS)[number];
const PS_CRD = 'packagesources.cozystack.io';
const EA_CRD = 'externalartifacts.source.toolkit.fluxcd.io';

let proxy: KubeProxy;
beforeAll(async () => {
  proxy = await startKubeProxy(admin, { tag: 'prerequisites' });
});
afterEach(() => proxy.clearFaults());
afterAll(async () => {
  await proxy.stop();
});

/** Runs the check as `fn` (its own identity, through the proxy); its log lines and report. */
async function check(fn: Fn, retryDelaysMs: readonly number[] = []) {
  const logs = new LogCapture();
  const logger = createLogger({ name: fn, level: 'debug', destination: logs });
  const kubeConfig = asFunction(proxy.kubeConfig(fn), fn);
  const config = testConfig({});
  const report = await checkPrerequisites({
    fn,
    kube: functionKubeClient(fn, kubeConfig, systemClock, 1000),
    // The waits between rounds are real (a few ms here): the wall clock.
    clock: systemClock,
    logger,
    config,
    retryDelaysMs,
  });
  const lines = logs.records.filter((r) => r.msg.startsWith('prerequisite'));
  return { report, lines };
}

const needsOf = (fn: Fn) => (API_NEEDS[fn] ?? []).map(describeNeed);

async function until(what: string, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('every CRD installed', () => {
  it.each(FUNCTIONS)('%s: one line, every need served', async (fn) => {
    const { report, lines } = await check(fn);
    expect(report).toEqual({ served: needsOf(fn), missing: [], unknown: [] });
    expect(lines.map((l) => [l.level, l.msg])).toEqual([['info', 'prerequisites served']]);
  });
});

describe('a degraded API server', () => {
  it.each([
    ['a timeout', { kind: 'timeout' } as const],
    ['503', { kind: 'status', status: 503 } as const],
    ['429', { kind: 'status', status: 429 } as const],
  ])('%s: unknown, read again later, then served', async (_n, fault) => {
    const handle = proxy.addFault({ ...fault, times: 2, match: { clientTag: 'surface-stalled' } });
    const { report, lines } = await check('surface-stalled', [50]);
    expect(handle.applied).toBe(2);
    expect(report.served).toEqual(needsOf('surface-stalled'));
    expect(lines.map((l) => l.msg)).toEqual(['prerequisites served']);
  });

  it('still failing after the last retry: one warn line `prerequisites unknown`, no throw', async () => {
    proxy.addFault({ kind: 'status', status: 503, match: { clientTag: 'detect' } });
    const { report, lines } = await check('detect', [20, 20]);
    expect(report).toEqual({ served: [], missing: [], unknown: needsOf('detect') });
    expect(lines.map((l) => [l.level, l.msg])).toEqual([['warn', 'prerequisites unknown']]);
    expect(lines[0]?.['errors']).toEqual({
      'source.extensions.fluxcd.io/v1beta1': 'Transient',
      'sources.knative.dev/v1': 'Transient',
    });
  });
});

describe('the PackageSource and ExternalArtifact CRDs absent', () => {
  const saved: k8s.V1CustomResourceDefinition[] = [];
  beforeAll(async () => {
    for (const name of [PS_CRD, EA_CRD]) {
      const crd = await ext.readCustomResourceDefinition({ name });
      saved.push({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name, ...(crd.metadata?.labels ? { labels: crd.metadata.labels } : {}) },
        spec: crd.spec,
      });
      await ext.deleteCustomResourceDefinition({ name });
    }
    await until('both CRDs gone', async () => {
      const names = (await ext.listCustomResourceDefinition()).items.map((c) => c.metadata?.name);
      return !names.includes(PS_CRD) && !names.includes(EA_CRD);
    });
  }, 120_000);
  afterAll(async () => {
    await installCrds(admin, saved);
  }, 120_000);

  it.each<[Fn, string[]]>([
    ['surface-stalled', ['packagesources.cozystack.io/v1alpha1 (PackageSource)']],
    [
      'heal-external-artifacts',
      ['externalartifacts.source.toolkit.fluxcd.io/v1 (ExternalArtifact)'],
    ],
  ])('%s: says once which API it needs, and writes a Warning Event', async (fn, missing) => {
    // Discovery drops a deleted CRD's resource within moments; read until it has.
    let result = await check(fn);
    await until('discovery without the CRD', async () => {
      result = await check(fn);
      return result.report.missing.length > 0;
    });
    const { report, lines } = result;
    expect(report.missing).toEqual(missing);
    expect(report.served).toEqual(needsOf(fn).filter((n) => !missing.includes(n)));
    expect(lines.map((l) => [l.level, l.msg])).toEqual([['error', 'prerequisite API not served']]);
    expect(lines[0]?.['missing']).toEqual(missing);
    const events = await admin.makeApiClient(k8s.EventsV1Api).listNamespacedEvent({
      namespace: RECOVERY_NAMESPACE,
      fieldSelector: `reason=${EVENT_REASON_PREREQUISITE_MISSING}`,
    });
    const ours = events.items.filter((e) => e.regarding?.name === fn);
    expect(ours).toHaveLength(1);
    expect(ours[0]).toMatchObject({
      type: 'Warning',
      regarding: { kind: 'Service', name: fn, namespace: RECOVERY_NAMESPACE },
    });
    expect(ours[0]?.note).toContain(missing[0]);
  });

  it('detect and force-drift need neither: served', async () => {
    for (const fn of ['detect', 'force-drift'] as const) {
      const { report } = await check(fn);
      expect(report).toEqual({ served: needsOf(fn), missing: [], unknown: [] });
    }
  });
});
