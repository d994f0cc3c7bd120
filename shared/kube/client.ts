// The KubePort on a real API server: raw REST requests through transport.ts (credentials and TLS
// from client-node's KubeConfig), JSON merge patches with resourceVersion preconditions, typed
// errors from errors-map.ts, and a delivery's failed call tried again in place when that costs
// less than its redelivery (in-place-retry.ts). The calls live by resource
// (artifact-generator-calls.ts, package-source-calls.ts, ping-source-calls.ts,
// kube-event-calls.ts) on one shared context
// (resource-context.ts). See docs/adr/0004-kube-adapter.md for the choices. It never imports
// config.ts (client-node's kubeconfig reader): main.ts loads that at the first request, so a
// function that never calls the API server never loads client-node.

import type { KubeConfig } from '@kubernetes/client-node';
import { artifactGeneratorCalls } from './artifact-generator-calls.js';
import { InvalidError } from './errors.js';
import { discoveryCalls } from './discovery-calls.js';
import { eventCalls } from './kube-event-calls.js';
import { packageSourceCalls } from './package-source-calls.js';
import { pingSourceCalls } from './ping-source-calls.js';
import type { KubePort } from './port.js';
import { createResourceContext } from './resource-context.js';
import { createCall } from './rest-call.js';
import { retryingInPlace, type WaitClock } from './in-place-retry.js';
import { createTransport, type KubeConfigSource } from './transport.js';

export { previousResourceVersion } from './artifact-generator-calls.js';
export { DEFAULT_LIST_LIMIT } from './resource-context.js';

export interface KubeClientOptions {
  /** The kubeconfig, or its loader (read at the first request: transport.ts). */
  kubeConfig: KubeConfig | KubeConfigSource;
  /** Named on every create and patch. */
  fieldManager: string;
  /** Per-request timeout; a request without a complete answer by then is a TransientError. */
  requestTimeoutMs?: number;
  /** The function's clock: a retried call's Retry-After is sat out on it (in-place-retry.ts). */
  clock: WaitClock;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

export function createKubeClient(opts: KubeClientOptions): KubePort {
  const fieldManager = opts.fieldManager;
  if (fieldManager === '' || fieldManager.length > 128) {
    throw new InvalidError('fieldManager must be 1..128 characters');
  }
  const timeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new InvalidError('requestTimeoutMs must be a positive number');
  }
  const ctx = createResourceContext(
    createCall(retryingInPlace(createTransport(opts.kubeConfig, timeoutMs), { clock: opts.clock })),
    fieldManager,
  );
  return {
    ...artifactGeneratorCalls(ctx),
    ...packageSourceCalls(ctx),
    ...pingSourceCalls(ctx),
    ...eventCalls(ctx),
    ...discoveryCalls(ctx),
  };
}
