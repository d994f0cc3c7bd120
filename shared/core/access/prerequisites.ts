// Which APIs each function needs from the cluster, and what it says when one is not served
// (issue 35, docs/operations.md "Prerequisites"). Pure: shared/runtime/prerequisites.ts asks the
// API server's discovery and writes the line and the Event.

import { EA_API_GROUP, EA_KIND, EA_PLURAL } from '../external-artifacts/objects.js';
import { eventName } from '../kube-events/series.js';
import {
  EVENTS_API_VERSION,
  REPORTING_CONTROLLER,
  REPORTING_INSTANCE_MAX,
  type KubeEvent,
} from '../kube-events/vocabulary.js';
import { formatTimeMicro } from '../codecs/time.js';
import {
  AG_API_GROUP,
  AG_KIND,
  PING_KIND,
  PING_PLURAL,
  PS_API_GROUP,
  PS_KIND,
} from '../objects/types.js';

/** One API a function needs: a resource of a group/version, as discovery lists it. */
export interface ApiNeed {
  readonly group: string;
  readonly version: string;
  /** The plural discovery lists. */
  readonly resource: string;
  readonly kind: string;
}

const AG: ApiNeed = {
  group: AG_API_GROUP,
  version: 'v1beta1',
  resource: 'artifactgenerators',
  kind: AG_KIND,
};
const PACKAGE_SOURCE: ApiNeed = {
  group: PS_API_GROUP,
  version: 'v1alpha1',
  resource: 'packagesources',
  kind: PS_KIND,
};
const PING_SOURCE: ApiNeed = {
  group: 'sources.knative.dev',
  version: 'v1',
  resource: PING_PLURAL,
  kind: PING_KIND,
};
const EXTERNAL_ARTIFACT: ApiNeed = {
  group: EA_API_GROUP,
  version: 'v1',
  resource: EA_PLURAL,
  kind: EA_KIND,
};

/** What each function reads or writes (dead-letter: nothing). */
export const API_NEEDS: Readonly<Record<string, readonly ApiNeed[]>> = {
  detect: [AG, PING_SOURCE],
  'force-drift': [AG],
  'surface-stalled': [AG, PACKAGE_SOURCE],
  'heal-external-artifacts': [AG, EXTERNAL_ARTIFACT],
  'dead-letter': [],
};

/** `artifactgenerators.source.extensions.fluxcd.io/v1beta1 (ArtifactGenerator)`: the CRD's name, the version, the kind. */
export function describeNeed(n: ApiNeed): string {
  return `${n.resource}.${n.group}/${n.version} (${n.kind})`;
}

/** What discovery said of one need: listed, not served, or not known (the read failed). */
export type NeedState = 'served' | 'missing' | 'unknown';

export interface PrerequisiteReport {
  readonly served: string[];
  readonly missing: string[];
  readonly unknown: string[];
}

/** The report of a round of discovery reads. */
export function reportOf(states: readonly (readonly [ApiNeed, NeedState])[]): PrerequisiteReport {
  const of = (s: NeedState) => states.filter(([, st]) => st === s).map(([n]) => describeNeed(n));
  return { served: of('served'), missing: of('missing'), unknown: of('unknown') };
}

export const EVENT_REASON_PREREQUISITE_MISSING = 'PrerequisiteMissing';
export const EVENT_ACTION_CHECK_PREREQUISITES = 'CheckPrerequisites';

/**
 * The Warning Event that says which APIs `fn` needs and the API server does not serve, regarding
 * the function's Knative Service in the install namespace (found with `kubectl get events
 * --field-selector reason=PrerequisiteMissing`). Named by (function, missing list), so every
 * replica and every cold start reports the same Event.
 */
export function prerequisiteEvent(
  fn: string,
  namespace: string,
  missing: readonly string[],
  reportingInstance: string,
  now: number,
): KubeEvent {
  const stamp = [...missing].sort().join(',');
  return {
    apiVersion: EVENTS_API_VERSION,
    kind: 'Event',
    metadata: {
      name: eventName(
        { namespace, name: fn, uid: '' },
        EVENT_REASON_PREREQUISITE_MISSING,
        EVENT_ACTION_CHECK_PREREQUISITES,
        stamp,
      ),
      namespace,
    },
    eventTime: formatTimeMicro(now),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: reportingInstance.slice(0, REPORTING_INSTANCE_MAX),
    action: EVENT_ACTION_CHECK_PREREQUISITES,
    reason: EVENT_REASON_PREREQUISITE_MISSING,
    type: 'Warning',
    note: `${fn} needs ${missing.join(', ')}, which the API server does not serve: install the CRD (docs/operations.md, "Prerequisites")`.slice(
      0,
      1024,
    ),
    regarding: { apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: fn, namespace },
  };
}
