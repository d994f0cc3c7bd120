// Recognising an ApiServerSource event's kind (Resource mode), for any watched kind: the `kind` and
// `apiversion` extensions when present, else the data's own kind. ag-cloudevent.ts is the same for AGs.

import type { IncomingEvent } from './cloudevent-http.js';

/** 'match' when the event is about `kind` in `group`, 'other' when it is about something else. */
export function resourceEventKind(
  event: IncomingEvent,
  kind: string,
  group: string,
): 'match' | 'other' {
  const k = event.extensions['kind'];
  const apiVersion = event.extensions['apiversion'];
  if (typeof k === 'string' && k !== kind) return 'other';
  if (typeof apiVersion === 'string' && !apiVersion.startsWith(`${group}/`)) return 'other';
  if (typeof event.data === 'object' && event.data !== null) {
    const dataKind = (event.data as { kind?: unknown }).kind;
    if (k === undefined && typeof dataKind === 'string' && dataKind !== kind) return 'other';
  }
  return 'match';
}
