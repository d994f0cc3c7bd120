// Who source-watcher re-creates an ExternalArtifact as (docs/adr/0054, rule 8), so that the heal
// deletes one only when its re-creation can succeed.

import { isDns1123Label } from '../codecs/names.js';
import type { ArtifactGenerator } from '../objects/types.js';

/** Who source-watcher re-creates an ExternalArtifact in `namespace` as. */
export type RecreateIdentity =
  | { kind: 'controller' }
  | { kind: 'service-account'; namespace: string; name: string }
  | { kind: 'unknown' };

/**
 * source-watcher v2.3 impersonates spec.serviceAccountName (a ServiceAccount in the AG's namespace)
 * for every ExternalArtifact it generates; without it, it uses its own credentials in the AG's
 * namespace and a default ServiceAccount, set by a controller flag this cannot read, elsewhere.
 */
export function recreateIdentityFor(ag: ArtifactGenerator, namespace: string): RecreateIdentity {
  const agNamespace = ag.metadata?.namespace;
  const sa = ag.spec?.['serviceAccountName'];
  if (sa !== undefined && sa !== '') {
    return isDns1123Label(sa) && isDns1123Label(agNamespace)
      ? { kind: 'service-account', namespace: agNamespace, name: sa }
      : { kind: 'unknown' };
  }
  return namespace === agNamespace ? { kind: 'controller' } : { kind: 'unknown' };
}
