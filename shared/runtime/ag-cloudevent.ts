// Recognising ArtifactGenerator events from the ApiServerSource (Resource and Reference mode).

import { isDns1123Label, isDns1123Subdomain } from '../core/codecs/names.js';
import { AG_API_GROUP, AG_KIND, type AgRef } from '../core/objects/types.js';
import type { IncomingEvent } from './cloudevent-http.js';

/** 'ag' when the event is about an ArtifactGenerator, 'other' for another kind. */
export function agEventKind(event: IncomingEvent): 'ag' | 'other' {
  const kind = event.extensions['kind'];
  const apiVersion = event.extensions['apiversion'];
  if (typeof kind === 'string' && kind !== AG_KIND) return 'other';
  if (typeof apiVersion === 'string' && !apiVersion.startsWith(`${AG_API_GROUP}/`)) return 'other';
  if (kind === undefined && typeof event.data === 'object' && event.data !== null) {
    const dataKind = (event.data as { kind?: unknown }).kind;
    if (typeof dataKind === 'string' && dataKind !== AG_KIND) return 'other';
  }
  return 'ag';
}

/** The object reference of a Reference-mode event's data ({kind, namespace, name, apiVersion}). */
export function refFromEventData(data: unknown): AgRef | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const { namespace, name } = data as { namespace?: unknown; name?: unknown };
  if (typeof namespace !== 'string' || typeof name !== 'string') return undefined;
  if (!isDns1123Label(namespace) || !isDns1123Subdomain(name)) return undefined;
  return { namespace, name };
}
