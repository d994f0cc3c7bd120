// The ExternalArtifacts of the scenarios (source.toolkit.fluxcd.io/v1, in the AGs' namespace), as
// the admin sees and edits them around the proxy: read, delete, clear, and a digest changed by
// hand the way `kubectl patch` or `kubectl edit` would (the field manager keeps owning it).

import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { AG_NAMESPACE, kc } from './scenario-kit.js';

const EA = { group: 'source.toolkit.fluxcd.io', version: 'v1', plural: 'externalartifacts' };
const api = kc.makeApiClient(CustomObjectsApi);
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export interface EaObject {
  metadata: {
    name: string;
    uid: string;
    managedFields?: { manager: string; subresource?: string }[];
  };
  status?: { artifact?: { digest?: string } };
}

/** The ExternalArtifact named `name`, or undefined when there is none. */
export function readEa(name: string): Promise<EaObject | undefined> {
  return api.getNamespacedCustomObject({ ...EA, namespace: AG_NAMESPACE, name }).then(
    (ea) => ea as EaObject,
    () => undefined,
  );
}

export async function deleteEa(name: string): Promise<void> {
  await api.deleteNamespacedCustomObject({ ...EA, namespace: AG_NAMESPACE, name });
}

/** Deletes every ExternalArtifact (those earlier scenarios left; gone already is fine). */
export async function deleteAllEas(): Promise<void> {
  const list = (await api.listNamespacedCustomObject({ ...EA, namespace: AG_NAMESPACE })) as {
    items: EaObject[];
  };
  for (const e of list.items) await deleteEa(e.metadata.name).catch(() => undefined);
}

/** Sets status.artifact.digest to `sha256:` and 64 times `hexDigit`, as `fieldManager`. */
export async function setDigestByHand(
  name: string,
  fieldManager: string,
  hexDigit: string,
): Promise<void> {
  await api.patchNamespacedCustomObjectStatus(
    {
      ...EA,
      namespace: AG_NAMESPACE,
      name,
      fieldManager,
      body: { status: { artifact: { digest: `sha256:${hexDigit.repeat(64)}` } } },
    },
    mergePatch,
  );
}
