// A function that cannot load its configuration is never Ready (issue 35, docs/adr/0064): each of
// the five built functions, started as its Knative Service starts it (the rendered recovery-config
// as its environment) but with one typo, exits 1 at start with the rules' line on stderr and never
// listens, so its readiness probe never answers and Knative keeps the old Revision serving. The
// same start with the shipped configuration listens and answers its readiness probe.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FUNCTION_NAMES,
  builtMain,
  ensureBuilt,
  spawnServer,
  type ChildFunction,
} from '../harness/functions.js';
import { findRecoveryConfig, renderKustomize } from '../support/manifests.js';

const shipped = findRecoveryConfig(renderKustomize('knative')).data;
const children: ChildFunction[] = [];

beforeAll(async () => {
  await ensureBuilt();
}, 300_000);
afterAll(async () => {
  await Promise.all(children.map((c) => c.stop()));
});

async function readiness(url: string): Promise<number | string> {
  try {
    return (await fetch(`${url}health/readiness`)).status;
  } catch (e) {
    return (e as { cause?: { code?: string } }).cause?.code ?? 'unreachable';
  }
}

describe.each(FUNCTION_NAMES)('%s', (name) => {
  it('exits 1 at start on RECOVERY_GRACE_PERIOD=30x, naming it, and never listens', async () => {
    const child = await spawnServer(builtMain(name), {
      ...shipped,
      RECOVERY_GRACE_PERIOD: '30x',
    });
    children.push(child);
    expect(await child.exited).toEqual({ code: 1, signal: null });
    expect(child.outputTail()).toContain(
      'RECOVERY_GRACE_PERIOD="30x": expected a duration from 1s to 1h, such as 2m30s',
    );
    expect(child.lines.map((l) => l.msg)).not.toContain('listening');
    expect(await readiness(child.url)).toBe('ECONNREFUSED');
  }, 30_000);

  it('with the shipped configuration it listens and is ready', async () => {
    // detect is ready only with a sink (docs/adr/0024): the SinkBinding's K_SINK in a cluster.
    const child = await spawnServer(builtMain(name), {
      ...shipped,
      K_SINK: 'http://127.0.0.1:9/',
    });
    children.push(child);
    await child.waitForLog('listening');
    expect(await readiness(child.url)).toBe(200);
    await child.stop();
  }, 30_000);
});
