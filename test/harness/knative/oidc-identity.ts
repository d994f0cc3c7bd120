// Knative Eventing's OIDC identities (Eventing >= 1.12, authentication-oidc on): every sender gets
// a ServiceAccount of its own, named from the resource as pkg/auth's
// GetOIDCServiceAccountNameForResource does (knative.dev/pkg kmeta.ChildName of the resource's
// name and `-oidc-<group>-<kind>`, lower case), and requests tokens for it by TokenRequest with
// the receiver's audience (pkg/auth's OIDCTokenProvider: an hour, cached until 5 minutes before
// expiry). The Broker's audience is `eventing.knative.dev/broker/<ns>/<name>` (pkg/auth
// GetAudience). docs/adr/0056.

import { createHash } from 'node:crypto';

const LONGEST = 63;
const MD5_HEX = 32;
const HEAD = LONGEST - MD5_HEX;

/** kmeta.ChildName: parent + suffix, hashed and trimmed when longer than 63 characters. */
export function knativeChildName(parent: string, suffix: string): string {
  if (parent.length <= LONGEST - suffix.length) return parent + suffix;
  if (HEAD - suffix.length <= 0) {
    const h = createHash('md5')
      .update(parent + suffix)
      .digest('hex');
    let ret = (HEAD < parent.length ? parent.slice(0, HEAD) : parent) + h;
    const d = LONGEST - ret.length;
    if (d > 0) ret += suffix.slice(0, d);
    return ret.replace(/[^a-zA-Z0-9]+$/, '');
  }
  const h = createHash('md5').update(parent).digest('hex');
  return `${parent.slice(0, HEAD - suffix.length)}${h}${suffix}`;
}

/** The OIDC ServiceAccount Eventing creates for a resource of group/kind named `name`. */
export function oidcServiceAccountName(group: string, kind: string, name: string): string {
  return knativeChildName(name, `-oidc-${group}-${kind}`).toLowerCase();
}

/** Its TokenReview username (an EventPolicy's `sub`). */
export function oidcSubject(namespace: string, group: string, kind: string, name: string): string {
  return `system:serviceaccount:${namespace}:${oidcServiceAccountName(group, kind, name)}`;
}

export const TRIGGER_GK = ['eventing.knative.dev', 'Trigger'] as const;
export const APISERVERSOURCE_GK = ['sources.knative.dev', 'ApiServerSource'] as const;
export const PINGSOURCE_GK = ['sources.knative.dev', 'PingSource'] as const;
export const SINKBINDING_GK = ['sources.knative.dev', 'SinkBinding'] as const;

/** pkg/auth GetAudience for a Broker. */
export function brokerAudience(namespace: string, name: string): string {
  return `eventing.knative.dev/broker/${namespace}/${name}`.toLowerCase();
}
