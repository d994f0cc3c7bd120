// Is the PackageSource an AG's controller ownerReference names really its owner? The reference is
// tenant input: anyone who may create an AG may write any ownerReference on it. A PackageSource
// counts as the AG's owner only when the AG sits where Cozystack's PackageSource controller puts
// the AGs it generates (one of the configured namespaces, named like the PackageSource) and the
// reference's uid is the uid of that PackageSource as read from the API server (docs/adr/0053).
// Anything else is a plain Flux AG: recovered as usual, never mirrored into a PackageSource. Pure.

import { controllingPackageSourceRef } from './ready.js';
import type { EventStep } from '../kube-events/vocabulary.js';
import type { ArtifactGenerator, PackageSource } from '../objects/types.js';

/** Where genuine PackageSource AGs live (RECOVERY_PACKAGESOURCE_AG_NAMESPACES). */
export interface PackageSourceOwnerRule {
  readonly agNamespaces: readonly string[];
}

/** The controller ownerReference's PackageSource, as the AG claims it (unverified). */
export interface OwnerClaim {
  readonly name: string;
  /** '' when the reference carries none (the API server requires one; an event may not). */
  readonly uid: string;
}

/** Why a claimed owner is refused. */
export type OwnerRefusalWhy = 'namespace' | 'name' | 'no-uid' | 'uid';

export interface OwnerRefusal {
  readonly kind: 'refused';
  readonly claim: OwnerClaim;
  readonly why: OwnerRefusalWhy;
  /** One sentence for the log and the Event's note. */
  readonly detail: string;
}

/** Before any read: no owner claimed, a claim to check against the PackageSource, or refused. */
export type OwnerPrecheck =
  { readonly kind: 'none' } | { readonly kind: 'read'; readonly claim: OwnerClaim } | OwnerRefusal;

/** With the PackageSource read: the owner verified, or refused (or none claimed). */
export type OwnerVerdict =
  { readonly kind: 'none' } | { readonly kind: 'verified'; readonly name: string } | OwnerRefusal;

/** The claimed owner (name and uid) of the AG's controller ownerReference, or null. */
export function ownerClaim(ag: ArtifactGenerator): OwnerClaim | null {
  return controllingPackageSourceRef(ag);
}

/**
 * What can be decided from the AG alone: whether it claims an owner, and whether it sits where
 * the claimed PackageSource's AG would (so that only then is the PackageSource read).
 */
export function precheckOwner(ag: ArtifactGenerator, rule: PackageSourceOwnerRule): OwnerPrecheck {
  const claim = ownerClaim(ag);
  if (claim === null) return { kind: 'none' };
  const namespace = ag.metadata?.namespace ?? '';
  const name = ag.metadata?.name ?? '';
  if (!rule.agNamespaces.includes(namespace)) {
    return refused(
      claim,
      'namespace',
      `the ArtifactGenerator is in namespace ${show(namespace)}; PackageSource ArtifactGenerators ` +
        `live in ${rule.agNamespaces.join(', ')}`,
    );
  }
  if (name !== claim.name) {
    return refused(
      claim,
      'name',
      `the ArtifactGenerator is named ${show(name)}; a PackageSource's ArtifactGenerator is named ` +
        `like the PackageSource`,
    );
  }
  if (claim.uid === '') return refused(claim, 'no-uid', 'the ownerReference has no uid');
  return { kind: 'read', claim };
}

/**
 * The owner verdict, given the PackageSource the claim names as read from the API server. The
 * caller reads the PackageSource only for a precheck of kind 'read'; a `ps` of another name is a
 * caller's mistake and refused.
 */
export function verifyOwner(
  ag: ArtifactGenerator,
  ps: PackageSource,
  rule: PackageSourceOwnerRule,
): OwnerVerdict {
  const pre = precheckOwner(ag, rule);
  if (pre.kind !== 'read') return pre;
  const { claim } = pre;
  const uid = ps.metadata?.uid;
  if (ps.metadata?.name !== claim.name || typeof uid !== 'string' || uid !== claim.uid) {
    // The real uid is not repeated: the note lands in the tenant's namespace.
    return refused(
      claim,
      'uid',
      `the ownerReference's uid ${show(claim.uid)} is not PackageSource ${claim.name}'s uid`,
    );
  }
  return { kind: 'verified', name: claim.name };
}

/** The owner-refused decision's one line: "<why>: <detail>". */
export function refusalText(r: OwnerRefusal): string {
  return `controller ownerReference to PackageSource ${r.claim.name} refused: ${r.detail}`;
}

/** The Event step of a refusal (on the AG, in its namespace: its tenant sees why). */
export function ownerRefusedStep(r: OwnerRefusal): EventStep {
  return {
    kind: 'owner-refused',
    packageSource: r.claim.name,
    uid: r.claim.uid,
    why: r.why,
    detail: r.detail,
  };
}

function refused(claim: OwnerClaim, why: OwnerRefusalWhy, detail: string): OwnerRefusal {
  return { kind: 'refused', claim, why, detail };
}

function show(value: string): string {
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
}
