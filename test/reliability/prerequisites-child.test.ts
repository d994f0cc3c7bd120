// The prerequisite check as the built function runs it (node dist/functions/detect/main.js,
// shared/runtime/main.ts): it starts with the function's Kubernetes client, at its first API call
// (a resync sweep here), reads discovery through the proxy and says `prerequisites served` once.
// With every discovery read held by a hung API server the sweep still answers and the function
// stays ready: the check never stands in the way.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testKubeConfig } from '../support/apiserver.js';
import { postEvent, resyncPing, startEventSink, type EventSink } from '../support/http-events.js';
import { startKubeProxy, type KubeProxy } from '../support/kube-proxy.js';
import { ensureBuilt, spawnFunction, type ChildFunction } from '../harness/functions.js';

const kc = testKubeConfig();
let proxy: KubeProxy;
let sink: EventSink;
let dir: string;
let kubeconfig: string;
const children: ChildFunction[] = [];

/** A discovery read: GET /apis/GROUP/VERSION (no resource). */
const discovery = { clientTag: 'detect', where: (c: { resource: string }) => c.resource === '' };

beforeAll(async () => {
  await ensureBuilt();
  proxy = await startKubeProxy(kc, { tag: 'detect' });
  sink = await startEventSink();
  dir = await mkdtemp(join(tmpdir(), 'rel-prereq-'));
  kubeconfig = join(dir, 'detect.kubeconfig');
  await proxy.writeKubeconfig(kubeconfig, 'detect');
}, 300_000);
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await sink?.close();
  await proxy?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

async function detect(): Promise<ChildFunction> {
  const child = await spawnFunction('detect', {
    KUBECONFIG: kubeconfig,
    K_SINK: sink.url,
    LOG_LEVEL: 'info',
    KUBE_REQUEST_TIMEOUT_MS: '2000',
  });
  children.push(child);
  return child;
}

describe('the built detect checks its prerequisites', () => {
  it('not before its first API call; then one line, every need served', async () => {
    proxy.clearCalls();
    const child = await detect();
    expect(proxy.count(discovery)).toBe(0);
    expect((await postEvent(child.url, resyncPing())).status).toBe(200);
    const line = await child.waitForLog('prerequisites served');
    expect(line['served']).toEqual([
      'artifactgenerators.source.extensions.fluxcd.io/v1beta1 (ArtifactGenerator)',
      'pingsources.sources.knative.dev/v1 (PingSource)',
    ]);
    expect(proxy.count(discovery)).toBe(2);
    expect(child.lines.filter((l) => String(l.msg).startsWith('prerequisite'))).toHaveLength(1);
  });

  it('discovery hung: the sweep still answers, and the function stays ready', async () => {
    const held = proxy.addFault({ kind: 'timeout', match: discovery });
    const child = await detect();
    expect((await postEvent(child.url, resyncPing())).status).toBe(200);
    expect((await fetch(new URL('/health/readiness', child.url))).status).toBe(200);
    expect(held.applied).toBeGreaterThan(0);
    expect(child.lines.find((l) => l.msg === 'prerequisites served')).toBeUndefined();
    held.remove();
  });
});
