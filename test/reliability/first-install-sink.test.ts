// First install (issue 12, item 7): detect's first Revision may start before the SinkBinding has
// injected K_SINK. The built detect (node dist/functions/detect/main.js), started the three ways
// it can be: with neither K_SINK nor BROKER_URL its readiness fails (Knative sends it no
// traffic) and it says why; with only recovery-config's BROKER_URL it is ready, says it falls
// back, and posts its action events there; once K_SINK is set, K_SINK wins.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTION_FORCE } from '../../shared/core/objects/cloudevent-types.js';
import type { ArtifactGenerator } from '../../shared/core/objects/types.js';
import { makeArtifactGenerator, testKubeConfig } from '../support/apiserver.js';
import { stuckStatus } from '../support/ag-states.js';
import {
  agResourceEvent,
  postEvent,
  startEventSink,
  type EventSink,
} from '../support/http-events.js';
import { startKubeProxy, type KubeProxy } from '../support/kube-proxy.js';
import { ensureBuilt, spawnFunction, type ChildFunction } from '../harness/functions.js';

const kc = testKubeConfig();
let proxy: KubeProxy;
let dir: string;
let kubeconfig: string;
const sinks: EventSink[] = [];
const children: ChildFunction[] = [];

beforeAll(async () => {
  await ensureBuilt();
  proxy = await startKubeProxy(kc, { tag: 'detect' });
  dir = await mkdtemp(join(tmpdir(), 'rel-sink-'));
  kubeconfig = join(dir, 'detect.kubeconfig');
  await proxy.writeKubeconfig(kubeconfig, 'detect');
}, 300_000);
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await Promise.all(sinks.map((s) => s.close()));
  await proxy?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

async function sink(): Promise<EventSink> {
  const s = await startEventSink();
  sinks.push(s);
  return s;
}

async function detect(env: Record<string, string>): Promise<ChildFunction> {
  const child = await spawnFunction('detect', {
    KUBECONFIG: kubeconfig,
    LOG_LEVEL: 'info',
    ...env,
  });
  children.push(child);
  return child;
}

async function readiness(child: ChildFunction): Promise<number> {
  return (await fetch(new URL('/health/readiness', child.url))).status;
}

/** A stuck AG (Ready Unknown for five minutes, past the 2m30s time rule, never forced): detect must emit a force. */
function stuckEvent() {
  const ag: ArtifactGenerator = {
    ...makeArtifactGenerator(),
    status: stuckStatus(Date.now() - 300_000),
  };
  ag.metadata = { ...ag.metadata, generation: 1, resourceVersion: '1', uid: 'u-1' };
  return agResourceEvent(ag);
}

describe('detect on first install: where its action events go', () => {
  it('no K_SINK and no BROKER_URL: not ready, and it says why', async () => {
    const child = await detect({});
    const line = child.lines.find((l) => String(l.msg).startsWith('no sink for action events'));
    expect(line).toMatchObject({ level: 'error' });
    expect(await readiness(child)).toBe(503);
    // Liveness is fine: the pod is not restarted in a loop, it just gets no traffic.
    expect((await fetch(new URL('/health/liveness', child.url))).status).toBe(200);
  });

  it('BROKER_URL only (the SinkBinding has not injected K_SINK yet): ready, falls back, posts there', async () => {
    const broker = await sink();
    const child = await detect({ BROKER_URL: broker.url });
    const line = child.lines.find((l) => String(l.msg).startsWith('K_SINK is not set'));
    expect(line).toMatchObject({ level: 'warn', from: 'BROKER_URL', sink: broker.url });
    expect(await readiness(child)).toBe(200);
    expect((await postEvent(child.url, stuckEvent())).status).toBe(200);
    expect(broker.events.map((e) => e.type)).toEqual([ACTION_FORCE]);
  });

  it('K_SINK set: it wins over BROKER_URL', async () => {
    const broker = await sink();
    const injected = await sink();
    const child = await detect({ BROKER_URL: broker.url, K_SINK: injected.url });
    expect(child.lines.find((l) => l.msg === 'action events go to K_SINK')).toMatchObject({
      from: 'K_SINK',
      sink: injected.url,
    });
    expect(await readiness(child)).toBe(200);
    expect((await postEvent(child.url, stuckEvent())).status).toBe(200);
    expect(injected.events.map((e) => e.type)).toEqual([ACTION_FORCE]);
    expect(broker.events).toEqual([]);
  });
});
