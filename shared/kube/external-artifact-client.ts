// ExternalArtifactPort on a real API server, through the same transport and typed errors as
// client.ts (a failed call tried again in place: in-place-retry.ts). Bad input is refused before any
// request.

import type { KubeConfig } from '@kubernetes/client-node';
import {
  EA_API_GROUP,
  EA_API_VERSION,
  EA_PLURAL,
  type ExternalArtifact,
} from '../core/external-artifacts/objects.js';
import { isDns1123Label, isDns1123Subdomain } from '../core/codecs/names.js';
import type { AgRef } from '../core/objects/types.js';
import { InvalidError } from './errors.js';
import { describeTarget, type RequestTarget } from './errors-map.js';
import type {
  DeletePreconditions,
  ExternalArtifactListOptions,
  ExternalArtifactPort,
  ServiceAccountRef,
} from './external-artifact-port.js';
import type { ListPage } from './port.js';
import { createCall, listPage } from './rest-call.js';
import { retryingInPlace, type WaitClock } from './in-place-retry.js';
import { createTransport, type KubeConfigSource } from './transport.js';

export interface ExternalArtifactClientOptions {
  /** The kubeconfig, or its loader (read at the first request: transport.ts). */
  kubeConfig: KubeConfig | KubeConfigSource;
  requestTimeoutMs?: number;
  /** The function's clock: a retried call's Retry-After is sat out on it (in-place-retry.ts). */
  clock: WaitClock;
}

const BASE = `/apis/${EA_API_VERSION}`;
const DEFAULT_LIMIT = 500;
const DEFAULT_TIMEOUT_MS = 10_000;
/** key=value with a qualified key and a label value: all this adapter ever needs to select. */
const SELECTOR =
  /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?=([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

export function createExternalArtifactClient(
  opts: ExternalArtifactClientOptions,
): ExternalArtifactPort {
  const timeoutMs = opts.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new InvalidError('requestTimeoutMs must be a positive number');
  }
  const call = createCall(
    retryingInPlace(createTransport(opts.kubeConfig, timeoutMs), { clock: opts.clock }),
  );
  return {
    async listExternalArtifacts(
      o: ExternalArtifactListOptions,
    ): Promise<ListPage<ExternalArtifact>> {
      const target: RequestTarget = {
        verb: 'list',
        resource: EA_PLURAL,
        namespace: o?.namespace,
      };
      if (!isDns1123Label(o?.namespace)) {
        throw new InvalidError(`${describeTarget(target)}: namespace is not a valid name`);
      }
      if (typeof o?.labelSelector !== 'string' || !SELECTOR.test(o.labelSelector)) {
        throw new InvalidError(`${describeTarget(target)}: labelSelector must be key=value`);
      }
      const limit = o.limit ?? DEFAULT_LIMIT;
      if (!Number.isInteger(limit) || limit <= 0) {
        throw new InvalidError(`${describeTarget(target)}: limit must be a positive integer`);
      }
      return listPage<ExternalArtifact>(
        call,
        target,
        `${BASE}/namespaces/${o.namespace}/${EA_PLURAL}`,
        { ...o, limit },
        { labelSelector: o.labelSelector },
      );
    },

    async deleteExternalArtifact(ref: AgRef, p: DeletePreconditions): Promise<void> {
      const target: RequestTarget = {
        verb: 'delete',
        resource: EA_PLURAL,
        namespace: ref?.namespace,
        name: ref?.name,
      };
      if (!isDns1123Label(ref?.namespace) || !isDns1123Subdomain(ref?.name)) {
        throw new InvalidError(`${describeTarget(target)}: not a valid Kubernetes name`);
      }
      if (
        typeof p?.uid !== 'string' ||
        p.uid === '' ||
        typeof p.resourceVersion !== 'string' ||
        p.resourceVersion === ''
      ) {
        throw new InvalidError(`${describeTarget(target)}: uid and resourceVersion are required`);
      }
      await call(target, {
        method: 'DELETE',
        path: `${BASE}/namespaces/${ref.namespace}/${EA_PLURAL}/${ref.name}`,
        body: {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          preconditions: { uid: p.uid, resourceVersion: p.resourceVersion },
        },
      });
    },

    async mayApplyExternalArtifacts(sa: ServiceAccountRef, namespace: string): Promise<boolean> {
      const target: RequestTarget = { verb: 'create', resource: 'subjectaccessreviews' };
      if (!isDns1123Label(sa?.namespace) || !isDns1123Label(sa?.name)) {
        throw new InvalidError(`${describeTarget(target)}: not a valid ServiceAccount`);
      }
      if (!isDns1123Label(namespace)) {
        throw new InvalidError(`${describeTarget(target)}: namespace is not a valid name`);
      }
      for (const [verb, subresource] of APPLY_ACCESS) {
        const review = await call<{ status?: { allowed?: unknown } }>(target, {
          method: 'POST',
          path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
          body: {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            spec: {
              user: `system:serviceaccount:${sa.namespace}:${sa.name}`,
              groups: [
                'system:serviceaccounts',
                `system:serviceaccounts:${sa.namespace}`,
                'system:authenticated',
              ],
              resourceAttributes: {
                group: EA_API_GROUP,
                resource: EA_PLURAL,
                subresource,
                verb,
                namespace,
              },
            },
          },
        });
        if (review.status?.allowed !== true) return false;
      }
      return true;
    },
  };
}

/** What source-watcher's apply of an ExternalArtifact and of its status is authorized as. */
const APPLY_ACCESS: ReadonlyArray<readonly [verb: string, subresource: string]> = [
  ['create', ''],
  ['patch', ''],
  ['patch', 'status'],
];
