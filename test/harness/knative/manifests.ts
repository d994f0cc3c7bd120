// Reads the Knative objects the emulation needs (Triggers, Brokers, PingSources) from the
// manifests in knative/. It follows kustomization.yaml `resources` like `kubectl apply -k` would
// (files and sub-directories; patches are not applied), so it loads exactly what the base install
// creates. A directory without a kustomization.yaml contributes all its *.yaml / *.yml files.

import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { PingSource } from '../../../shared/kube/port.js';
import { parseIsoDuration } from './iso-duration.js';

/** Where a Trigger (or a dead-letter sink) sends: a Service by name, or a fixed URI. */
export type Destination =
  { service: string; uri?: undefined } | { uri: string; service?: undefined };

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

/** No retries, as Knative does when neither the Trigger nor the Broker sets a delivery spec. */
export const NO_RETRY: Readonly<DeliverySpec> = Object.freeze({
  retry: 0,
  backoffPolicy: 'exponential',
  backoffDelayMs: 0,
});

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Loads Triggers, Brokers and PingSources from a kustomize directory (default namespace fills gaps). */
export function loadKnativeManifests(dir: string, defaultNamespace = 'default'): KnativeManifests {
  const docs: { doc: Obj; namespace: string | undefined; file: string }[] = [];
  collect(resolve(dir), undefined, docs, new Set());
  const out: KnativeManifests = { triggers: [], brokers: [], pingSources: [] };
  for (const { doc, namespace, file } of docs) {
    const meta = isObj(doc.metadata) ? doc.metadata : {};
    const ns = namespace ?? str(meta.namespace) ?? defaultNamespace;
    const where = `${file} (${str(doc.kind)}/${str(meta.name) ?? '?'})`;
    if (doc.kind === 'Trigger') out.triggers.push(toTrigger(doc, ns, where));
    else if (doc.kind === 'Broker') out.brokers.push(toBroker(doc, ns, where));
    else if (doc.kind === 'PingSource') {
      out.pingSources.push({ ...(doc as PingSource), metadata: { ...meta, namespace: ns } });
    }
  }
  // Triggers without their own delivery inherit the Broker's (Knative's defaulting).
  for (const t of out.triggers) {
    if (t.delivery !== NO_RETRY) continue;
    t.delivery = { ...NO_RETRY };
    const b = out.brokers.find((x) => x.name === t.broker && x.namespace === t.namespace);
    if (b?.delivery) t.delivery = b.delivery;
  }
  return out;
}

function collect(
  path: string,
  namespace: string | undefined,
  out: { doc: Obj; namespace: string | undefined; file: string }[],
  seen: Set<string>,
): void {
  if (seen.has(path)) return;
  seen.add(path);
  if (!existsSync(path)) throw new Error(`manifest path ${path} does not exist`);
  if (statSync(path).isDirectory()) {
    const kfile = ['kustomization.yaml', 'kustomization.yml', 'Kustomization']
      .map((f) => join(path, f))
      .find((f) => existsSync(f));
    if (!kfile) {
      for (const f of readdirSync(path).sort()) {
        if (/\.ya?ml$/.test(f)) collect(join(path, f), namespace, out, seen);
      }
      return;
    }
    const [k] = readYaml(kfile);
    const kns = str(k?.namespace) ?? namespace;
    const resources = Array.isArray(k?.resources) ? k.resources : [];
    for (const r of resources) {
      if (typeof r === 'string' && !/^[a-z]+:\/\//.test(r)) collect(join(path, r), kns, out, seen);
    }
    // A Component's resources join the build like the kustomization's own.
    const components = Array.isArray(k?.components) ? k.components : [];
    for (const c of components) {
      if (typeof c === 'string' && !/^[a-z]+:\/\//.test(c)) collect(join(path, c), kns, out, seen);
    }
    return;
  }
  for (const doc of readYaml(path)) out.push({ doc, namespace, file: path });
}

function readYaml(file: string): Obj[] {
  const parsed = parseAllDocuments(readFileSync(file, 'utf8'));
  const docs = Array.isArray(parsed) ? parsed : [parsed];
  const out: Obj[] = [];
  for (const d of docs) {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]?.message ?? 'YAML error'}`);
    const v: unknown = d.toJS();
    if (isObj(v)) out.push(v);
  }
  return out;
}

function toTrigger(doc: Obj, namespace: string, where: string): TriggerSpec {
  const meta = isObj(doc.metadata) ? doc.metadata : {};
  const spec = isObj(doc.spec) ? doc.spec : {};
  const name = str(meta.name);
  const broker = str(spec.broker);
  if (!name || !broker) throw new Error(`${where}: a Trigger needs metadata.name and spec.broker`);
  const attributes: Record<string, string> = {};
  const filter = isObj(spec.filter) ? spec.filter : {};
  if (isObj(filter.attributes)) {
    for (const [k, v] of Object.entries(filter.attributes)) attributes[k] = String(v);
  }
  const trigger: TriggerSpec = {
    namespace,
    name,
    broker,
    attributes,
    subscriber: toDestination(spec.subscriber, `${where} spec.subscriber`),
    delivery: isObj(spec.delivery) ? toDelivery(spec.delivery, where) : NO_RETRY,
  };
  if (Array.isArray(spec.filters)) {
    trigger.filters = spec.filters.map((f) => toFilterExpression(f, where));
  }
  return trigger;
}

function toBroker(doc: Obj, namespace: string, where: string): BrokerSpec {
  const meta = isObj(doc.metadata) ? doc.metadata : {};
  const spec = isObj(doc.spec) ? doc.spec : {};
  const name = str(meta.name);
  if (!name) throw new Error(`${where}: a Broker needs metadata.name`);
  const b: BrokerSpec = { namespace, name };
  if (isObj(spec.delivery)) b.delivery = toDelivery(spec.delivery, where);
  return b;
}

/** Parses a Knative delivery spec (retry, backoffPolicy, backoffDelay, timeout, deadLetterSink). */
export function toDelivery(d: Obj, where: string): DeliverySpec {
  const retry = d.retry === undefined ? 0 : Number(d.retry);
  if (!Number.isInteger(retry) || retry < 0) {
    throw new Error(`${where}: delivery.retry must be a non-negative integer`);
  }
  const policy = d.backoffPolicy ?? 'exponential';
  if (policy !== 'exponential' && policy !== 'linear') {
    throw new Error(`${where}: delivery.backoffPolicy must be exponential or linear`);
  }
  const delivery: DeliverySpec = {
    retry,
    backoffPolicy: policy,
    backoffDelayMs: d.backoffDelay === undefined ? 0 : parseIsoDuration(String(d.backoffDelay)),
  };
  if (d.timeout !== undefined) delivery.timeoutMs = parseIsoDuration(String(d.timeout));
  if (d.deadLetterSink !== undefined) {
    delivery.deadLetterSink = toDestination(d.deadLetterSink, `${where} deadLetterSink`);
  }
  return delivery;
}

function toDestination(d: unknown, where: string): Destination {
  if (isObj(d)) {
    const ref = isObj(d.ref) ? d.ref : undefined;
    const refName = ref ? str(ref.name) : undefined;
    if (refName) return { service: refName };
    const uri = str(d.uri);
    if (uri) return { uri };
  }
  throw new Error(`${where}: needs ref.name or uri`);
}

function toFilterExpression(f: unknown, where: string): FilterExpression {
  if (!isObj(f)) throw new Error(`${where}: a filter expression must be an object`);
  const keys = Object.keys(f);
  if (keys.length !== 1) throw new Error(`${where}: a filter expression has exactly one dialect`);
  const key = keys[0];
  const v = f[key as string];
  switch (key) {
    case 'exact':
    case 'prefix':
    case 'suffix': {
      if (!isObj(v)) throw new Error(`${where}: filters.${key} must map attributes to strings`);
      const m = Object.fromEntries(Object.entries(v).map(([a, b]) => [a, String(b)]));
      return { [key]: m } as FilterExpression;
    }
    case 'all':
    case 'any': {
      if (!Array.isArray(v)) throw new Error(`${where}: filters.${key} must be a list`);
      const list = v.map((x) => toFilterExpression(x, where));
      return key === 'all' ? { all: list } : { any: list };
    }
    case 'not':
      return { not: toFilterExpression(v, where) };
    default:
      throw new Error(`${where}: filter dialect "${String(key)}" is not emulated`);
  }
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}
