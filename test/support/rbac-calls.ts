// Proxy calls in RBAC terms: which ServiceAccount each recorded client runs as, and a recorded
// call as the request RBAC authorizes.

import type { ApiRequestInfo } from './kube-proxy.js';
import type { ApiRequest } from './manifests.js';

/** Client tag in the proxy log -> the ServiceAccount that client runs as. */
export const CLIENTS: readonly (readonly [tag: string, serviceAccount: string])[] = [
  ['detect', 'detect'],
  ['force-drift', 'force-drift'],
  ['surface-stalled', 'surface-stalled'],
  ['apiserversource', 'apiserversource'],
  ['dead-letter', 'dead-letter'],
  ['heal-external-artifacts', 'heal-external-artifacts'],
];

export function requestOf(call: ApiRequestInfo): ApiRequest {
  return {
    verb: call.verb,
    group: call.group,
    resource: call.resource,
    ...(call.subresource !== '' ? { subresource: call.subresource } : {}),
    ...(call.namespace !== '' ? { namespace: call.namespace } : {}),
    ...(call.name !== '' ? { name: call.name } : {}),
  };
}
