// The refusals an end-to-end scenario provokes on purpose (docs/adr/0059's refusal counter): a
// delivery sent over real HTTP straight to a function, with no token or with a real token of an
// identity the function does not hear (sender authentication on, docs/adr/0056); a tenant's AG
// naming a platform PackageSource as its controller (docs/adr/0053), made by the tenant identity
// in its own namespace; and an operator's own ValidatingAdmissionPolicy, in force in the real API
// server, that denies status writes to a PackageSource labelled frozen (the shipped policies
// deny nothing the product writes, docs/adr/0055). Each helper returns what it provoked, so the
// scenario can compare it with what the functions counted.

import * as k8s from '@kubernetes/client-node';
import { HTTP, type CloudEventV1 } from 'cloudevents';
import { functionAudience } from '../../shared/core/access/sender-auth.js';
import {
  PS_API_GROUP,
  PS_PLURAL,
  type AgRef,
  type PackageSource,
} from '../../shared/core/objects/types.js';
import type { FunctionName, System } from '../harness/system.js';
import {
  MERGE_PATCH,
  PS_VERSION,
  apiStatusOf,
  createArtifactGenerator,
  createPackageSource,
  customObjects,
  ensureNamespace,
  getPackageSource,
  makeArtifactGenerator,
  makePackageSource,
  uniqueName,
} from '../support/apiserver.js';
import { postRaw } from '../support/http-events.js';
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
  return tokens.tokenFor(INTRUDER, functionAudience(fn));
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

/** The label an operator puts on a PackageSource whose status no one may write. */
export const FROZEN_LABEL = 'e2e.example.com/frozen';
export const FREEZE_POLICY = 'e2e-frozen-packagesource-status';
const POLICY_API = 'admissionregistration.k8s.io/v1';

/** The freeze policy and its binding (Deny), as an operator of the cluster would write them. */
function freezeObjects(): {
  policy: k8s.V1ValidatingAdmissionPolicy;
  binding: k8s.V1ValidatingAdmissionPolicyBinding;
} {
  return {
    policy: {
      apiVersion: POLICY_API,
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: FREEZE_POLICY },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [PS_API_GROUP],
              apiVersions: ['*'],
              resources: [`${PS_PLURAL}/status`],
              operations: ['UPDATE'],
            },
          ],
        },
        validations: [
          {
            expression: `oldObject.metadata.?labels[?'${FROZEN_LABEL}'].orValue('') != 'true'`,
            reason: 'Forbidden',
            message: 'this PackageSource is frozen by the operator',
          },
        ],
      },
    },
    binding: {
      apiVersion: POLICY_API,
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: FREEZE_POLICY },
      spec: { policyName: FREEZE_POLICY, validationActions: ['Deny'] },
    },
  };
}

/** A dry-run status write to PackageSource `name` (nothing is stored). */
const dryRunStatusWrite = (name: string) =>
  customObjects(kc).patchClusterCustomObjectStatus(
    {
      group: PS_API_GROUP,
      version: PS_VERSION,
      plural: PS_PLURAL,
      name,
      body: { status: { conditions: [] } },
      dryRun: 'All',
    },
    MERGE_PATCH,
  );

/**
 * Puts the freeze policy in force and returns once it denies a (dry-run) status write to a
 * frozen probe PackageSource: the API server applies a new policy only once its informer has
 * seen the policy and its binding. Returns the removal (policy, binding, probe).
 */
export async function installFreezePolicy(): Promise<() => Promise<void>> {
  const admission = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
  const { policy, binding } = freezeObjects();
  await admission.createValidatingAdmissionPolicy({ body: policy });
  await admission.createValidatingAdmissionPolicyBinding({ body: binding });
  const probe = await createFrozenPackageSource(uniqueName('freeze-probe'));
  const remove = async (): Promise<void> => {
    const gone = (call: Promise<unknown>) =>
      call.catch((e: unknown) => {
        if (apiStatusOf(e) !== 404) throw e;
      });
    await gone(admission.deleteValidatingAdmissionPolicyBinding({ name: FREEZE_POLICY }));
    await gone(admission.deleteValidatingAdmissionPolicy({ name: FREEZE_POLICY }));
    const api = customObjects(kc);
    await gone(
      api.deleteClusterCustomObject({
        group: PS_API_GROUP,
        version: PS_VERSION,
        plural: PS_PLURAL,
        name: probe,
      }),
    );
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await dryRunStatusWrite(probe);
    } catch (e) {
      if (apiStatusOf(e) === 403 && String((e as { body?: unknown }).body).includes(FREEZE_POLICY))
        return remove;
      await remove();
      throw e;
    }
    if (Date.now() > deadline) {
      await remove();
      throw new Error(`${FREEZE_POLICY} not in force within 30 s`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A PackageSource labelled frozen (its status writes denied while the policy is in force). */
async function createFrozenPackageSource(name: string): Promise<string> {
  const ps: PackageSource = makePackageSource({ name });
  ps.metadata = { ...ps.metadata, labels: { [FROZEN_LABEL]: 'true' } };
  await createPackageSource(ps, kc);
  return name;
}

export interface FrozenPair {
  readonly name: string;
  readonly ref: AgRef;
}

/** A healthy PackageSource AG whose PackageSource is frozen. */
export async function createFrozenPair(namespace: string): Promise<FrozenPair> {
  const name = await createFrozenPackageSource(uniqueName('prom-frozen'));
  const uid = (await getPackageSource(name, kc)).metadata?.uid ?? '';
  await createArtifactGenerator(
    makeArtifactGenerator({ name, namespace, owner: { name, uid } }),
    kc,
  );
  return { name, ref: { namespace, name } };
}

/** The operator lifts the freeze: the label goes (a write the policy does not match). */
export async function unfreeze(name: string): Promise<void> {
  await customObjects(kc).patchClusterCustomObject(
    {
      group: PS_API_GROUP,
      version: PS_VERSION,
      plural: PS_PLURAL,
      name,
      body: { metadata: { labels: { [FROZEN_LABEL]: null } } },
    },
    MERGE_PATCH,
  );
}
