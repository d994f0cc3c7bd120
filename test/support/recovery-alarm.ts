// detect's follow-up alarm PingSource on the test API server: read it (schedule, due moment,
// resourceVersion) and delete it, by name in the recovery namespace.

import * as k8s from '@kubernetes/client-node';
import { ANNOTATION_ALARM_MOMENT, parseTime } from '../../shared/core/index.js';
import { customObjects } from './apiserver.js';

export const ALARM_NAMESPACE = 'source-watcher-recovery';
export const ALARM_NAME = 'recovery-alarm';

const pingSources = (name: string) =>
  ({
    group: 'sources.knative.dev',
    version: 'v1',
    plural: 'pingsources',
    namespace: ALARM_NAMESPACE,
    name,
  }) as const;

export interface AlarmState {
  schedule: string;
  /** The due moment of its annotation (null when the annotation is absent or unreadable). */
  moment: number | null;
  rv: string;
}

/** The alarm PingSource `name`, or null when there is none. */
export async function readAlarm(
  kc: k8s.KubeConfig,
  name: string = ALARM_NAME,
): Promise<AlarmState | null> {
  try {
    const ps = (await customObjects(kc).getNamespacedCustomObject(pingSources(name))) as {
      metadata: { annotations?: Record<string, string>; resourceVersion: string };
      spec: { schedule: string };
    };
    return {
      schedule: ps.spec.schedule,
      moment: parseTime(ps.metadata.annotations?.[ANNOTATION_ALARM_MOMENT]),
      rv: ps.metadata.resourceVersion,
    };
  } catch (e) {
    if (e instanceof k8s.ApiException && e.code === 404) return null;
    throw e;
  }
}

/** Deletes the alarm PingSource `name`; gone is fine. */
export async function deleteAlarm(kc: k8s.KubeConfig, name: string = ALARM_NAME): Promise<void> {
  await customObjects(kc)
    .deleteNamespacedCustomObject(pingSources(name))
    .catch(() => undefined);
}
