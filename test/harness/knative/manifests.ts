// The Knative objects the emulation routes by (Triggers, Brokers, PingSources), converted from the
// objects of knative/ as the one kubectl-free reader loads them (loadKustomizationResources in
// support/manifests.ts; unit/manifests/render.test.ts checks it against kustomize). The manifest
// tests check this same conversion, so the wiring they check is the wiring the emulation runs.

import type { PingSource } from '../../../shared/kube/port.js';
import {
  loadKustomizationResources,
  objectsOfKind,
  record,
  type K8sObject,
} from '../../support/manifests.js';
import { parseIsoDuration } from './iso-duration.js';

/** Where a Trigger (or a dead-letter sink) sends: a Knative Service by name (knative/ names no URI). */
export interface Destination {
  service: string;
  /** `audience`: the OIDC audience a token for this destination is requested with (ADR 56). */
  audience?: string;
}

export interface DeliverySpec {
  /** Retries after the first attempt (Knative `retry`). */
  retry: number;
  backoffPolicy: 'exponential' | 'linear';
  /** Knative `backoffDelay`, in (unscaled) milliseconds. */
  backoffDelayMs: number;
  /** Knative `timeout` per attempt, in (unscaled) milliseconds, when set. */
  timeoutMs?: number;
  deadLetterSink?: Destination;
}

/** One filter expression of the newer `spec.filters` (SQL filters are not emulated). */
export type FilterExpression =
  | { exact: Record<string, string> }
  | { prefix: Record<string, string> }
  | { suffix: Record<string, string> }
  | { all: FilterExpression[] }
  | { any: FilterExpression[] }
  | { not: FilterExpression };

export interface TriggerSpec {
  namespace: string;
  name: string;
  broker: string;
  /** `spec.filter.attributes`: exact match on every listed attribute (extensions included). */
  attributes: Record<string, string>;
  /** `spec.filters`, when present (they take precedence over `attributes`, as in Knative). */
  filters?: FilterExpression[];
  subscriber: Destination;
  /** The Trigger's own, else its Broker's (Knative's defaulting), else no retries. */
  delivery: DeliverySpec;
}

export interface BrokerSpec {
  namespace: string;
  name: string;
  delivery?: DeliverySpec;
}

export interface KnativeManifests {
  triggers: TriggerSpec[];
  brokers: BrokerSpec[];
  pingSources: PingSource[];
}

/** Triggers, Brokers and PingSources of a kustomize directory (default namespace fills gaps). */
export function loadKnativeManifests(dir: string, defaultNamespace = 'default'): KnativeManifests {
  return toKnativeManifests(loadKustomizationResources(dir), defaultNamespace);
}

/** Validates and converts the Triggers, Brokers and PingSources among the objects. */
export function toKnativeManifests(
  objects: readonly K8sObject[],
  defaultNamespace = 'default',
): KnativeManifests {
  const ns = (o: K8sObject): string => o.metadata.namespace ?? defaultNamespace;
  const brokers = objectsOfKind(objects, 'Broker').map((o) => toBroker(o, ns(o)));
  return {
    triggers: objectsOfKind(objects, 'Trigger').map((o) => toTrigger(o, ns(o), brokers)),
    brokers,
    pingSources: objectsOfKind(objects, 'PingSource').map((o) => ({
      ...(o as PingSource),
      metadata: { ...o.metadata, namespace: ns(o) },
    })),
  };
}

function toTrigger(o: K8sObject, namespace: string, brokers: BrokerSpec[]): TriggerSpec {
  const where = `Trigger ${o.metadata.name}`;
  const spec = record(o.spec, `${where}: spec`);
  const broker = spec.broker;
  if (typeof broker !== 'string' || broker === '') throw new Error(`${where}: spec.broker missing`);
  const filter = record(spec.filter ?? {}, `${where}: spec.filter`);
  const trigger: TriggerSpec = {
    namespace,
    name: o.metadata.name,
    broker,
    attributes: stringMap(filter.attributes ?? {}, `${where}: filter attributes`),
    subscriber: serviceRef(spec.subscriber, `${where}: spec.subscriber`),
    delivery:
      spec.delivery === undefined
        ? (brokers.find((b) => b.name === broker && b.namespace === namespace)?.delivery ?? {
            retry: 0,
            backoffPolicy: 'exponential',
            backoffDelayMs: 0,
          })
        : toDelivery(spec.delivery, where),
  };
  if (Array.isArray(spec.filters)) {
    trigger.filters = spec.filters.map((f) => toFilterExpression(f, where));
  }
  return trigger;
}

function toBroker(o: K8sObject, namespace: string): BrokerSpec {
  const where = `Broker ${o.metadata.name}`;
  const spec = record(o.spec ?? {}, `${where}: spec`);
  const b: BrokerSpec = { namespace, name: o.metadata.name };
  if (spec.delivery !== undefined) b.delivery = toDelivery(spec.delivery, where);
  return b;
}

/** A Knative delivery spec (retry, backoffPolicy, backoffDelay, timeout, deadLetterSink). */
function toDelivery(raw: unknown, where: string): DeliverySpec {
  const d = record(raw, `${where}: spec.delivery`);
  const { retry = 0, backoffPolicy = 'exponential', backoffDelay, timeout, deadLetterSink } = d;
  if (typeof retry !== 'number' || !Number.isInteger(retry) || retry < 0) {
    throw new Error(`${where}: delivery.retry must be a non-negative integer`);
  }
  if (backoffPolicy !== 'exponential' && backoffPolicy !== 'linear') {
    throw new Error(`${where}: delivery.backoffPolicy must be exponential or linear`);
  }
  const delivery: DeliverySpec = {
    retry,
    backoffPolicy,
    backoffDelayMs: backoffDelay === undefined ? 0 : parseIsoDuration(String(backoffDelay)),
  };
  if (timeout !== undefined) delivery.timeoutMs = parseIsoDuration(String(timeout));
  if (deadLetterSink !== undefined) {
    delivery.deadLetterSink = serviceRef(deadLetterSink, `${where}: delivery.deadLetterSink`);
  }
  return delivery;
}

function serviceRef(destination: unknown, where: string): Destination {
  const ref = record(record(destination, where).ref, `${where}.ref`);
  if (ref.apiVersion !== 'serving.knative.dev/v1' || ref.kind !== 'Service') {
    throw new Error(`${where}: expected a ref to a serving.knative.dev/v1 Service`);
  }
  if (typeof ref.name !== 'string' || ref.name === '') {
    throw new Error(`${where}: ref.name missing`);
  }
  const audience = record(destination, where).audience;
  if (audience !== undefined && (typeof audience !== 'string' || audience === '')) {
    throw new Error(`${where}: audience must be a non-empty string`);
  }
  return typeof audience === 'string' ? { service: ref.name, audience } : { service: ref.name };
}

function stringMap(raw: unknown, where: string): Record<string, string> {
  const m = record(raw, where);
  for (const [key, value] of Object.entries(m)) {
    if (typeof value !== 'string') throw new Error(`${where}: ${key} is not a string`);
  }
  return { ...(m as Record<string, string>) };
}

function toFilterExpression(f: unknown, where: string): FilterExpression {
  const keys = Object.keys(record(f, `${where}: a filter expression`));
  if (keys.length !== 1) throw new Error(`${where}: a filter expression has exactly one dialect`);
  const key = keys[0] as string;
  const v = (f as Record<string, unknown>)[key];
  switch (key) {
    case 'exact':
    case 'prefix':
    case 'suffix':
      return { [key]: stringMap(v, `${where}: filters.${key}`) } as FilterExpression;
    case 'all':
    case 'any': {
      if (!Array.isArray(v)) throw new Error(`${where}: filters.${key} must be a list`);
      const list = v.map((x) => toFilterExpression(x, where));
      return key === 'all' ? { all: list } : { any: list };
    }
    case 'not':
      return { not: toFilterExpression(v, where) };
    default:
      throw new Error(`${where}: filter dialect "${key}" is not emulated`);
  }
}
