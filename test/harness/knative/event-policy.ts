// An EventPolicy's `from` as Knative Eventing resolves it (pkg/auth ResolveSubjects, v1.20): a
// `sub` is taken as written; a `ref` is looked up (its namespace defaults to the policy's, the
// webhook's SetDefaults) and becomes `system:serviceaccount:<ref namespace>:<its
// status.auth.serviceAccountName>`, the OIDC identity Eventing gave it. A ref to an object that
// does not exist fails the whole resolution: the policy is not Ready (SubjectsNotResolved), and
// a Broker it applies to is not Ready either (EventPoliciesReady). docs/adr/0068.

import { oidcSubject } from './oidc-identity.js';

interface ObjectLike {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
}

interface FromEntry {
  readonly sub?: string;
  readonly ref?: { apiVersion: string; kind: string; name: string; namespace?: string };
}

export interface ResolvedPolicy {
  /** The subjects the Broker's ingress would allow. */
  readonly subjects: string[];
  /** The refs that name no existing object (`Kind ns/name`): any one makes the policy not Ready. */
  readonly unresolved: string[];
}

/** `policy`'s `from`, resolved against `existing` (the objects of the cluster, e.g. a render). */
export function resolveEventPolicy(
  policy: ObjectLike & { spec?: unknown },
  existing: readonly ObjectLike[],
): ResolvedPolicy {
  const from = ((policy.spec as { from?: FromEntry[] } | undefined)?.from ?? []) as FromEntry[];
  const subjects: string[] = [];
  const unresolved: string[] = [];
  for (const f of from) {
    if (f.ref !== undefined) {
      const ns = f.ref.namespace ?? policy.metadata.namespace ?? '';
      const found = existing.some(
        (o) =>
          o.apiVersion === f.ref?.apiVersion &&
          o.kind === f.ref.kind &&
          o.metadata.name === f.ref.name &&
          o.metadata.namespace === ns,
      );
      if (!found) unresolved.push(`${f.ref.kind} ${ns}/${f.ref.name}`);
      const group = f.ref.apiVersion.includes('/') ? f.ref.apiVersion.split('/')[0]! : '';
      subjects.push(oidcSubject(ns, group, f.ref.kind, f.ref.name));
    } else if (f.sub !== undefined) subjects.push(f.sub);
  }
  return { subjects, unresolved };
}
