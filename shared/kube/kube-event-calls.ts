// The KubePort's events.k8s.io/v1 Event calls: create, get and a merge patch of the series. They
// are best effort and may carry their own, shorter deadline.

import { EVENTS_API_VERSION, type KubeEvent } from '../core/kube-events/vocabulary.js';
import { InvalidError } from './errors.js';
import { describeTarget, type RequestTarget } from './errors-map.js';
import type { EventCallOptions, KubePort } from './port.js';
import { checkName, isPlainObject, MERGE_PATCH, type ResourceContext } from './resource-context.js';

const EVENTS = { base: `/apis/${EVENTS_API_VERSION}`, plural: 'events' };

export type EventCalls = Pick<KubePort, 'createEvent' | 'getEvent' | 'patchEventSeries'>;

export function eventCalls(ctx: ResourceContext): EventCalls {
  const { call, writeQuery } = ctx;
  return {
    async createEvent(event: KubeEvent, o: EventCallOptions = {}): Promise<KubeEvent> {
      const namespace = event?.metadata?.namespace;
      const name = event?.metadata?.name;
      const target: RequestTarget = { verb: 'create', resource: EVENTS.plural, namespace, name };
      const path = `${eventsPath(target, namespace, name)}`;
      return call(target, {
        method: 'POST',
        path: path.slice(0, path.lastIndexOf('/')),
        query: writeQuery,
        body: event,
        // A lost answer's second send would be counted as a second occurrence (design §8); a
        // failed create is owed instead (docs/adr/0061, 0071).
        once: true,
        ...eventDeadline(target, o),
      });
    },

    async getEvent(namespace: string, name: string, o: EventCallOptions = {}): Promise<KubeEvent> {
      const target: RequestTarget = { verb: 'get', resource: EVENTS.plural, namespace, name };
      return call(target, {
        method: 'GET',
        path: eventsPath(target, namespace, name),
        ...eventDeadline(target, o),
      });
    },

    async patchEventSeries(namespace, name, series, o): Promise<KubeEvent> {
      const target: RequestTarget = { verb: 'patch', resource: EVENTS.plural, namespace, name };
      const path = eventsPath(target, namespace, name);
      if (
        !isPlainObject(series) ||
        !Number.isInteger(series.count) ||
        series.count < 2 ||
        typeof series.lastObservedTime !== 'string'
      ) {
        throw new InvalidError(`${describeTarget(target)}: series must have count >= 2 and a time`);
      }
      return call(target, {
        method: 'PATCH',
        path,
        query: writeQuery,
        contentType: MERGE_PATCH,
        body: {
          ...(o.resourceVersion !== undefined
            ? { metadata: { resourceVersion: o.resourceVersion } }
            : {}),
          series: { count: series.count, lastObservedTime: series.lastObservedTime },
        },
        ...eventDeadline(target, o),
      });
    },
  };
}

function eventsPath(
  target: RequestTarget,
  namespace: string | undefined,
  name: string | undefined,
): string {
  checkName(target, 'namespace', namespace ?? '');
  checkName(target, 'name', name ?? '');
  return `${EVENTS.base}/namespaces/${namespace}/${EVENTS.plural}/${name}`;
}

function eventDeadline(target: RequestTarget, o: EventCallOptions): { timeoutMs?: number } {
  if (o.timeoutMs === undefined) return {};
  if (!Number.isFinite(o.timeoutMs) || o.timeoutMs <= 0) {
    throw new InvalidError(`${describeTarget(target)}: timeoutMs must be a positive number`);
  }
  return { timeoutMs: o.timeoutMs };
}
