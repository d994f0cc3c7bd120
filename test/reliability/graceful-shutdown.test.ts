// The built force-drift (node dist/functions/force-drift/main.js) under SIGTERM with forces in
// flight, and under SIGKILL in the middle of a force. Its writes are held by the proxy so the
// signal lands while requests are open. main.js uses the system clock: AG times are real times.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ACTION_FORCE,
  ANNOTATION_ATTEMPTS,
  ANNOTATION_LAST_RECOVERY_AT,
  ANNOTATION_REQUESTED_AT,
  formatTimeNano,
  hasMarker,
  parseTime,
  ASKED_RESUME_SETTLE_MS,
  type ActionData,
} from '../../shared/core/index.js';
import type { ArtifactGenerator } from '../../shared/core/objects/types.js';
import { agRefOf, getArtifactGenerator, testKubeConfig, uniqueName } from '../support/apiserver.js';
import { createAgWithStatus, stuckStatus } from '../support/ag-states.js';
import { cloudEvent, postEvent } from '../support/http-events.js';
import { startKubeProxy, type KubeProxy } from '../support/kube-proxy.js';
import { agViolations } from './support/ag-contract.js';
import { ensureBuilt, spawnFunction, type ChildFunction } from '../harness/functions.js';
import { serviceAccountToken } from '../support/identities.js';

const NS = uniqueName('rel-sd');
const kc = testKubeConfig();
let proxy: KubeProxy;
let dir: string;
const children: ChildFunction[] = [];

beforeAll(async () => {
  await ensureBuilt();
  proxy = await startKubeProxy(kc, { tag: 'shutdown' });
  dir = await mkdtemp(join(tmpdir(), 'rel-shutdown-'));
}, 300_000);
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await proxy?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

async function startForceDrift(tag: string): Promise<ChildFunction> {
  const kubeconfig = join(dir, `${tag}.kubeconfig`);
  await proxy.writeKubeconfig(kubeconfig, tag, { token: serviceAccountToken('force-drift') });
  const child = await spawnFunction('force-drift', {
    KUBECONFIG: kubeconfig,
    LOG_LEVEL: 'info',
    KUBE_REQUEST_TIMEOUT_MS: '10000',
  });
  children.push(child);
  return child;
}

function forceEvent(ag: ArtifactGenerator, attempts = 0) {
  const data: ActionData = {
    namespace: ag.metadata?.namespace ?? '',
    name: ag.metadata?.name ?? '',
    resourceVersion: ag.metadata?.resourceVersion ?? '',
    attempts,
    decidedAt: formatTimeNano(Date.now()),
  };
  return cloudEvent({ type: ACTION_FORCE, source: '/source-watcher-recovery/detect', data });
}

async function stuckAgs(n: number): Promise<ArtifactGenerator[]> {
  return Promise.all(
    Array.from({ length: n }, () =>
      createAgWithStatus(kc, stuckStatus(Date.now() - 300_000), { namespace: NS }),
    ),
  );
}

async function until(what: string, ok: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function forced(ag: ArtifactGenerator): boolean {
  const a = ag.metadata?.annotations ?? {};
  const last = parseTime(a[ANNOTATION_LAST_RECOVERY_AT]);
  return (
    a[ANNOTATION_ATTEMPTS] === '1' &&
    last !== null &&
    parseTime(a[ANNOTATION_REQUESTED_AT]) === last &&
    hasMarker(ag)
  );
}

describe('force-drift main.js: graceful shutdown', () => {
  it('SIGTERM with forces in flight: every request answers, every force completes, exit 0', async () => {
    const tag = 'shutdown-term';
    const fd = await startForceDrift(tag);
    const ags = await stuckAgs(4);
    // Every write is held 600 ms: a force (claim, mark, bump) takes about two seconds.
    proxy.addFault({ match: { clientTag: tag, verb: 'patch' }, kind: 'slow', delayMs: 600 });
    const answers = Promise.all(ags.map((ag) => postEvent(fd.url, forceEvent(ag))));
    await until('four claims in flight', () => proxy.count({ clientTag: tag, verb: 'patch' }) >= 4);

    const signalledAt = Date.now();
    fd.kill('SIGTERM');
    await fd.waitForLog('shutting down');
    // It stops accepting at once.
    await expect(postEvent(fd.url, forceEvent(ags[0] as ArtifactGenerator))).rejects.toThrow();

    const results = await answers;
    const exit = await fd.exited;
    console.log(
      `[shutdown] SIGTERM with ${ags.length} forces in flight: answers ${results.map((r) => r.status).join(',')}, ` +
        `exit code ${exit.code} ${Date.now() - signalledAt} ms after the signal`,
    );
    expect(results.map((r) => r.body)).toEqual(ags.map(() => ({ result: 'forced' })));
    expect(exit).toEqual({ code: 0, signal: null });
    expect(fd.lines.some((l) => l.msg === 'shut down')).toBe(true);
    for (const ag of ags) {
      const after = await getArtifactGenerator(agRefOf(ag), kc);
      expect(agViolations(after)).toEqual([]);
      expect(forced(after)).toBe(true);
    }
  });

  it('SIGKILL between claim and marker: the restarted function resumes the force, once', async () => {
    const tag = 'shutdown-kill';
    const fd = await startForceDrift(tag);
    const [ag] = await stuckAgs(1);
    if (ag === undefined) throw new Error('no AG');
    const ref = agRefOf(ag);
    // The marker write never gets through: the process dies while it waits.
    const held = proxy.addFault({
      match: { clientTag: tag, verb: 'patch', subresource: 'status' },
      kind: 'timeout',
    });
    const answer = postEvent(fd.url, forceEvent(ag)).catch((e: unknown) => e);
    await until('the marker write in flight', () => held.applied >= 1);
    fd.kill('SIGKILL');
    expect(await fd.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await answer).toBeInstanceOf(Error);
    held.remove();

    const half = await getArtifactGenerator(ref, kc);
    const claimedAt = parseTime(half.metadata?.annotations?.[ANNOTATION_LAST_RECOVERY_AT]);
    expect(half.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBe('1');
    expect(half.metadata?.annotations?.[ANNOTATION_REQUESTED_AT]).toBeUndefined();
    expect(hasMarker(half)).toBe(false);
    expect(agViolations(half)).toEqual([]);
    if (claimedAt === null) throw new Error('no claim time');

    // An event that asked for another attempt waits out the settle time: the claim may still be
    // in flight elsewhere.
    const restarted = await startForceDrift(`${tag}-2`);
    expect((await postEvent(restarted.url, forceEvent(half, 1))).body).toEqual({
      result: 'waiting',
    });
    // The Broker redelivers the event that asked for this force (the request failed): once the
    // claim is ASKED_RESUME_SETTLE_MS old it finishes the force without counting a new attempt;
    // younger, it answers 503 so that the next redelivery does (docs/adr/0044).
    const early = await postEvent(restarted.url, forceEvent(half));
    if ((early.body as { result: string }).result !== 'resumed') {
      expect(early).toMatchObject({ status: 503, body: { result: 'claim-in-flight' } });
      const wait = claimedAt + ASKED_RESUME_SETTLE_MS + 200 - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      expect((await postEvent(restarted.url, forceEvent(half))).body).toEqual({
        result: 'resumed',
      });
    }
    const after = await getArtifactGenerator(ref, kc);
    expect(forced(after)).toBe(true);
    expect(parseTime(after.metadata?.annotations?.[ANNOTATION_REQUESTED_AT])).toBe(claimedAt);
    expect(agViolations(after)).toEqual([]);

    restarted.kill('SIGTERM');
    expect(await restarted.exited).toEqual({ code: 0, signal: null });
  });
});
