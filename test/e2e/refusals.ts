// The refusals an end-to-end scenario provokes on purpose (docs/adr/0059's refusal counter): a
// delivery sent over real HTTP straight to a function, with no token or with a real token of an
// identity the function does not hear (sender authentication on, docs/adr/0056), and a tenant's
// AG naming a platform PackageSource as its controller (docs/adr/0053), made by the tenant
// identity in its own namespace. Each helper returns what it provoked, so the scenario can compare
// it with what the functions counted.

import { HTTP, type CloudEventV1 } from 'cloudevents';
import { knativeServiceAudience } from '../../shared/core/sender-auth.js';
import type { AgRef } from '../../shared/core/types.js';
import type { FunctionName, System } from '../harness/system.js';
import {
  createArtifactGenerator,
  ensureNamespace,
  getPackageSource,
  makeArtifactGenerator,
  uniqueName,
} from '../support/apiserver.js';
import { postRaw } from '../support/http-events.js';
import { RECOVERY_NAMESPACE } from '../support/manifests.js';
import { tenantKubeConfig } from '../support/tenant-identity.js';
import { kc } from './scenario-kit.js';

/** A Trigger no function lists among its senders: its token is real, and refused (403). */
export const INTRUDER = { group: 'eventing.knative.dev', kind: 'Trigger', name: 'intruder' };

export interface SentDelivery {
  readonly fn: FunctionName;
  readonly status: number;
  readonly body: unknown;
}

/**
 * Posts `event` (binary mode, as the Broker does) to the first replica of `fn`, with
 * `Authorization: Bearer <token>` when a token is given.
 */
export async function deliverDirectly(
  system: System,
  fn: FunctionName,
  event: CloudEventV1<unknown>,
  token?: string,
): Promise<SentDelivery> {
  const replica = system.functions.find((f) => f.name === fn);
  if (replica === undefined) throw new Error(`no ${fn} replica in the system`);
  const message = HTTP.binary(event);
  const headers: Record<string, string> = {
    ...(message.headers as Record<string, string>),
    ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}),
  };
  const answer = await postRaw(replica.url, headers, String(message.body));
  return { fn, status: answer.status, body: answer.body };
}

/** A real token of the intruder Trigger's Eventing identity, for `fn`'s audience. */
export async function intruderToken(system: System, fn: FunctionName): Promise<string> {
  const tokens = system.knative.tokens;
  if (tokens === undefined) throw new Error('the system runs without OIDC tokens (oidc: true)');
  return tokens.tokenFor(INTRUDER, knativeServiceAudience(RECOVERY_NAMESPACE, fn));
}

export interface ForgedAg {
  readonly ref: AgRef;
  readonly uid: string;
}

/**
 * An AG made by the tenant of `namespace`, whose controller ownerReference names the platform
 * PackageSource `packageSource` with its real uid copied (the garbage collector keeps it; no
 * PackageSource AG lives in a tenant namespace, so the functions refuse the owner).
 */
export async function createForgedOwnerAg(
  namespace: string,
  packageSource: string,
): Promise<ForgedAg> {
  const uid = (await getPackageSource(packageSource, kc)).metadata?.uid ?? '';
  if (uid === '') throw new Error(`PackageSource ${packageSource} has no uid`);
  await ensureNamespace(namespace);
  const tenant = await tenantKubeConfig(namespace);
  const name = uniqueName('prom-forged');
  const made = await createArtifactGenerator(
    makeArtifactGenerator({ name, namespace, owner: { name: packageSource, uid } }),
    tenant,
  );
  return { ref: { namespace, name }, uid: made.metadata?.uid ?? '' };
}
