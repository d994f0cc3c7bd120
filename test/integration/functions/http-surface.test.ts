// What every function shares at the HTTP surface: health, body limit, CloudEvent parsing.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Express } from 'express';
import { createApp as detectApp } from '../../../functions/detect/app.js';
import { createApp as forceDriftApp } from '../../../functions/force-drift/app.js';
import { createApp as surfaceApp } from '../../../functions/surface-stalled/app.js';
import { createSyncTurns } from '../../../functions/surface-stalled/sync-turns.js';
import { createApp as deadLetterApp } from '../../../functions/dead-letter/app.js';
import { createAlarmFollowUps } from '../../../functions/detect/alarm.js';
import { missingSinkEmitter } from '../../../shared/runtime/broker-emitter.js';
import { APISERVER_UPDATE } from '../../../shared/core/index.js';
import { testKubeConfig } from '../../support/apiserver.js';
import { commonDeps, serve, SettableClock } from '../../harness/functions.js';
import { cloudEvent, postEvent, postRaw, type Started } from '../../support/http-events.js';

const started: Record<string, Started> = {};

beforeAll(async () => {
  const clock = new SettableClock(Date.now());
  const deps = (name: string) => commonDeps({ kubeConfig: testKubeConfig(), name, clock });
  const d = deps('detect');
  const apps: Record<string, Express> = {
    detect: detectApp({
      ...d,
      emitter: missingSinkEmitter(),
      followUps: createAlarmFollowUps({ kube: d.kube, clock, config: d.config }),
    }),
    'force-drift': forceDriftApp(deps('force-drift')),
    'surface-stalled': surfaceApp({ ...deps('surface-stalled'), turns: createSyncTurns() }),
    'dead-letter': deadLetterApp({ logger: d.logger }),
  };
  for (const [name, app] of Object.entries(apps)) started[name] = await serve(app);
});
afterAll(async () => {
  await Promise.all(Object.values(started).map((s) => s.close()));
});

const names = ['detect', 'force-drift', 'surface-stalled', 'dead-letter'];
const url = (name: string) => started[name]?.url ?? '';

describe.each(names)('%s', (name) => {
  it('answers the health checks', async () => {
    for (const path of ['health/liveness', 'health/readiness']) {
      const res = await fetch(`${url(name)}${path}`);
      expect(res.status).toBe(200);
    }
  });

  it('rejects a 2 MiB body with 413', async () => {
    const big = JSON.stringify({
      specversion: '1.0',
      id: '1',
      type: APISERVER_UPDATE,
      source: '/s',
      data: 'x'.repeat(2 * 1024 * 1024),
    });
    expect(
      (await postRaw(url(name), { 'content-type': 'application/cloudevents+json' }, big)).status,
    ).toBe(413);
  });

  it('accepts a body just under 1 MiB (a large AG with managedFields fits)', async () => {
    const event = cloudEvent({
      type: 'com.example.unrelated',
      data: { blob: 'x'.repeat(1000 * 1000) },
    });
    expect((await postEvent(url(name), event, 'structured')).status).toBe(200);
  });

  it.each([
    ['not a CloudEvent', { 'content-type': 'application/json' }, '{"hello":"world"}', 400],
    ['batch mode', { 'content-type': 'application/cloudevents-batch+json' }, '[]', 400],
    [
      'an invalid CloudEvent',
      { 'content-type': 'application/cloudevents+json' },
      '{"specversion":"1.0","type":"t"}',
      400,
    ],
    [
      'a structured event that is not JSON',
      { 'content-type': 'application/cloudevents+yaml' },
      'a: b',
      415,
    ],
  ])('answers %s with %i', async (_n, headers, body, status) => {
    expect((await postRaw(url(name), headers, body)).status).toBe(status);
  });

  it('answers 404 on other paths', async () => {
    expect((await fetch(`${url(name)}nope`)).status).toBe(404);
  });
});
