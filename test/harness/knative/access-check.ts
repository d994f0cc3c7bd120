// What Knative's ApiServerSource controller checks before it starts the adapter: a
// SubjectAccessReview per verb (get, list, watch) on each watched resource for the source's
// ServiceAccount. A denied verb keeps the source from starting (Knative reports it not ready).

import { AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { AG_RESOURCE } from './apiserver-source.js';

export interface ApiServerSourceAccessCheck {
  /** The controller's own credentials (the admin here). */
  controllerKubeConfig: KubeConfig;
  /** spec.serviceAccountName and the source's namespace. */
  serviceAccount: string;
  namespace: string;
  /** The watched resources (default: ArtifactGenerators). */
  resources?: readonly { group: string; plural: string }[];
}

export async function checkApiServerSourceAccess(check: ApiServerSourceAccessCheck): Promise<void> {
  const api = check.controllerKubeConfig.makeApiClient(AuthorizationV1Api);
  const user = `system:serviceaccount:${check.namespace}:${check.serviceAccount}`;
  for (const resource of check.resources ?? [AG_RESOURCE]) {
    const denied: string[] = [];
    for (const verb of ['get', 'list', 'watch']) {
      const review = await api.createSubjectAccessReview({
        body: {
          spec: {
            user,
            groups: ['system:serviceaccounts', `system:serviceaccounts:${check.namespace}`],
            resourceAttributes: { verb, group: resource.group, resource: resource.plural },
          },
        },
      });
      if (review.status?.allowed !== true) denied.push(verb);
    }
    if (denied.length > 0) {
      throw new Error(
        `ApiServerSource: ServiceAccount ${check.namespace}/${check.serviceAccount} may not ${denied.join(', ')} ` +
          `${resource.plural}.${resource.group}: the source does not start (insufficient permissions)`,
      );
    }
  }
}
