// Trigger filtering as the Knative Broker does it: `spec.filter.attributes` is an exact match on
// every listed attribute (context attributes and extensions alike; an attribute the event lacks
// does not match); `spec.filters` (exact/prefix/suffix/all/any/not), when present, wins.

import type { CloudEventV1 } from 'cloudevents';
import type { FilterExpression, TriggerSpec } from './manifests.js';

/** The event's context attributes and extensions as strings (data excluded). */
export function eventAttributes(event: CloudEventV1<unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(event)) {
    if (k === 'data' || k === 'data_base64' || v === undefined || v === null) continue;
    out[k] = typeof v === 'string' ? v : String(v);
  }
  return out;
}

export function triggerMatches(trigger: TriggerSpec, event: CloudEventV1<unknown>): boolean {
  const attrs = eventAttributes(event);
  if (trigger.filters && trigger.filters.length > 0) {
    return trigger.filters.every((f) => expressionMatches(f, attrs));
  }
  return Object.entries(trigger.attributes).every(([k, v]) => attrs[k] === v);
}

function expressionMatches(f: FilterExpression, attrs: Record<string, string>): boolean {
  if ('exact' in f) return Object.entries(f.exact).every(([k, v]) => attrs[k] === v);
  if ('prefix' in f) {
    return Object.entries(f.prefix).every(([k, v]) => attrs[k]?.startsWith(v) === true);
  }
  if ('suffix' in f) {
    return Object.entries(f.suffix).every(([k, v]) => attrs[k]?.endsWith(v) === true);
  }
  if ('all' in f) return f.all.every((x) => expressionMatches(x, attrs));
  if ('any' in f) return f.any.some((x) => expressionMatches(x, attrs));
  return !expressionMatches(f.not, attrs);
}
