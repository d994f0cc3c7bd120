// Reads the Kubernetes Events (events.k8s.io/v1) on the real test API server, as the admin, and
// renders them the way `kubectl describe` prints an object's Events section.

import type { KubeConfig } from '@kubernetes/client-node';
import { EventsV1Api } from '@kubernetes/client-node';
import type { KubeEvent } from '../../shared/core/kube-events/vocabulary.js';
import { parseTime } from '../../shared/core/codecs/time.js';

/** Every Event in `namespace` whose `regarding` is the object with this uid (or name). */
export async function listEventsAbout(
  kc: KubeConfig,
  namespace: string,
  about: { uid?: string; name: string },
): Promise<KubeEvent[]> {
  const api = kc.makeApiClient(EventsV1Api);
  const list = await api.listNamespacedEvent({ namespace });
  const items = list.items as unknown as KubeEvent[];
  return items.filter((e) =>
    about.uid !== undefined ? e.regarding?.uid === about.uid : e.regarding?.name === about.name,
  );
}

/** Occurrences an Event stands for. */
export function occurrences(e: KubeEvent): number {
  return e.series?.count ?? 1;
}

/** kubectl's short duration (HumanDuration): 45s, 2m30s, 12m, 3h. */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  return `${Math.floor(m / 60)}h`;
}

/**
 * The Events section of `kubectl describe` (Type, Reason, Age, From, Message), oldest first, with
 * ages relative to `now`. From is "reportingController, reportingInstance" as kubectl prints it
 * for events.k8s.io Events; a series shows "(xN over D)".
 */
export function describeEvents(events: KubeEvent[], now: number): string {
  const sorted = [...events].sort(
    (a, b) => (parseTime(a.eventTime) ?? 0) - (parseTime(b.eventTime) ?? 0),
  );
  const rows = sorted.map((e) => {
    const first = parseTime(e.eventTime) ?? now;
    const age =
      e.series !== undefined
        ? `${humanDuration(now - (parseTime(e.series.lastObservedTime) ?? first))} (x${e.series.count} over ${humanDuration(now - first)})`
        : humanDuration(now - first);
    return [e.type, e.reason, age, `${e.reportingController}, ${e.reportingInstance}`, e.note];
  });
  const header = ['Type', 'Reason', 'Age', 'From', 'Message'];
  const all = [header, header.map((h) => '-'.repeat(h.length)), ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const lines = all.map(
    (r) =>
      '  ' +
      r
        .map((cell, i) => (i === r.length - 1 ? cell : (cell ?? '').padEnd(widths[i] ?? 0)))
        .join('  '),
  );
  return ['Events:', ...lines].join('\n');
}
