// The set-up the function suites share: one recording, fault-injecting proxy in front of the
// test API server (tagged per suite), one event sink standing in for the Broker, and the functions
// started from the functions room (test/harness/functions.ts), each calling through the proxy with
// its own client tag and ServiceAccount. Everything started is closed after the file.

import { afterAll, beforeAll } from 'vitest';
import type { RequestListener } from 'node:http';
import type { Logger } from '../../shared/runtime/logger.js';
import { testKubeConfig } from './apiserver.js';
import { serve, startFunction, type SettableClock } from '../harness/functions.js';
import { startEventSink, type EventSink, type Started } from './http-events.js';
import { startKubeProxy, type KubeProxy } from './kube-proxy.js';

export interface StartOptions {
  env?: Record<string, string>;
  logger?: Logger;
}

export interface FunctionSuite {
  /** The proxy (set before the first test). */
  readonly proxy: KubeProxy;
  /** The Broker stand-in detect emits to (set before the first test). */
  readonly sink: EventSink;
  /** Serves `app`; closed after the file. */
  serve(app: RequestListener): Promise<Started>;
  startDetect(clock: SettableClock, opts?: StartOptions): Promise<Started>;
  startForceDrift(clock: SettableClock, opts?: StartOptions): Promise<Started>;
  startSurfaceStalled(clock: SettableClock, opts?: StartOptions): Promise<Started>;
  startHeal(clock: SettableClock, opts?: StartOptions): Promise<Started>;
}

/** Registers the file's beforeAll/afterAll and returns its doors. */
export function functionSuite(tag: string, kc = testKubeConfig()): FunctionSuite {
  const servers: Started[] = [];
  let proxy: KubeProxy | undefined;
  let sink: EventSink | undefined;
  beforeAll(async () => {
    proxy = await startKubeProxy(kc, { tag });
    sink = await startEventSink();
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    await sink?.close();
    await proxy?.stop();
  });
  const ready = <T>(x: T | undefined): T => {
    if (x === undefined) throw new Error('functionSuite: used before its beforeAll ran');
    return x;
  };
  const track = (s: Started): Started => {
    servers.push(s);
    return s;
  };
  const start = async (
    fn: 'detect' | 'force-drift' | 'surface-stalled' | 'heal-external-artifacts',
    clock: SettableClock,
    opts: StartOptions,
  ): Promise<Started> =>
    track(
      await startFunction({
        fn,
        kubeConfig: ready(proxy).kubeConfig(fn),
        clock,
        ...(fn === 'detect' ? { sinkUrl: ready(sink).url } : {}),
        ...(opts.env !== undefined ? { env: opts.env } : {}),
        ...(opts.logger !== undefined ? { logger: opts.logger } : {}),
      }),
    );
  return {
    get proxy() {
      return ready(proxy);
    },
    get sink() {
      return ready(sink);
    },
    serve: async (app) => track(await serve(app)),
    startDetect: (clock, opts = {}) => start('detect', clock, opts),
    startForceDrift: (clock, opts = {}) => start('force-drift', clock, opts),
    startSurfaceStalled: (clock, opts = {}) => start('surface-stalled', clock, opts),
    startHeal: (clock, opts = {}) => start('heal-external-artifacts', clock, opts),
  };
}
