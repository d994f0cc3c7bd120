// The CloudEvent a Knative ApiServerSource (Resource mode) makes of one object: type
// dev.knative.apiserver.resource.add|update|delete, source = the API server URL, subject =
// /apis/<apiVersion>/namespaces/<ns>/<plural>/<name>, a fresh UUID id, the time, extensions kind /
// apiversion / name / namespace, data = the whole object (application/json). One builder for the
// emulated ApiServerSource and for the suites that post such an event themselves.

import { randomUUID } from 'node:crypto';
import { CloudEvent } from 'cloudevents';

/** The in-cluster API server URL Knative's adapter reports as the source. */
export const IN_CLUSTER_SERVER = 'https://10.96.0.1:443';

export interface ApiServerSourceEventOptions {
  /** The event type (dev.knative.apiserver.resource.*). */
  readonly type: string;
  readonly obj: {
    readonly apiVersion?: string;
    readonly kind?: string;
    readonly metadata?: { readonly namespace?: string; readonly name?: string };
  };
  /** The resource's plural, for the subject. */
  readonly plural: string;
  /** The API server URL (the event's source). */
  readonly server: string;
  /** Epoch ms of the event's time. */
  readonly now: number;
  /** The object's apiVersion and kind when it does not carry them. */
  readonly defaults?: { readonly apiVersion: string; readonly kind: string };
}

export function apiServerSourceEvent(o: ApiServerSourceEventOptions): CloudEvent<unknown> {
  const meta = o.obj.metadata ?? {};
  const apiVersion = o.obj.apiVersion ?? o.defaults?.apiVersion ?? '';
  const namespace = meta.namespace ?? '';
  const name = meta.name ?? '';
  const subject = namespace
    ? `/apis/${apiVersion}/namespaces/${namespace}/${o.plural}/${name}`
    : `/apis/${apiVersion}/${o.plural}/${name}`;
  return new CloudEvent<unknown>({
    specversion: '1.0',
    id: randomUUID(),
    type: o.type,
    source: o.server,
    subject,
    time: new Date(o.now).toISOString(),
    datacontenttype: 'application/json',
    kind: o.obj.kind ?? o.defaults?.kind ?? '',
    apiversion: apiVersion,
    name,
    namespace,
    data: o.obj,
  });
}
