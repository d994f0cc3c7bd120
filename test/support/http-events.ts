// Real-HTTP helpers for function tests: start an app on 127.0.0.1, post CloudEvents in binary or
// structured mode, and a recording sink that stands in for the Broker's ingress.

import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestListener } from 'node:http';
import { CloudEvent, HTTP, type CloudEventV1 } from 'cloudevents';
import { randomUUID } from 'node:crypto';
import {
  ACTION_SOURCE,
  PING,
  type ActionData,
} from '../../shared/core/objects/cloudevent-types.js';
import { formatTimeNano } from '../../shared/core/codecs/time.js';
import {
  AG_API_VERSION,
  AG_KIND,
  AG_PLURAL,
  type ArtifactGenerator,
} from '../../shared/core/objects/types.js';
import {
  apiServerSourceEvent,
  IN_CLUSTER_SERVER,
} from '../harness/knative/apiserver-source-event.js';
import { RECOVERY_NAMESPACE } from './manifests.js';

export interface Started {
  readonly url: string;
  close(): Promise<void>;
}

export async function startHttp(handler: RequestListener): Promise<Started> {
  const server: Server = createServer(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export type Mode = 'binary' | 'structured';

export function cloudEvent(attrs: {
  type: string;
  source?: string;
  data?: unknown;
  extensions?: Record<string, string>;
  subject?: string;
}): CloudEvent<unknown> {
  return new CloudEvent<unknown>({
    id: randomUUID(),
    type: attrs.type,
    source: attrs.source ?? '/test',
    ...(attrs.subject !== undefined ? { subject: attrs.subject } : {}),
    datacontenttype: 'application/json',
    data: attrs.data,
    ...(attrs.extensions ?? {}),
  });
}

/**
 * The ApiServerSource Resource-mode event Knative sends for an AG (`type` defaults to an update;
 * `source` to the in-cluster API server), built as the emulated ApiServerSource builds it.
 */
export function agResourceEvent(
  ag: { apiVersion?: string; kind?: string; metadata?: { namespace?: string; name?: string } },
  type = 'dev.knative.apiserver.resource.update',
  source = IN_CLUSTER_SERVER,
): CloudEvent<unknown> {
  return apiServerSourceEvent({
    type,
    obj: ag,
    plural: AG_PLURAL,
    server: source,
    now: Date.now(),
    defaults: { apiVersion: AG_API_VERSION, kind: AG_KIND },
  });
}

/** An action event from detect about `ag` (force, clear-tracking, stalled). */
export function actionEvent(
  type: string,
  ag: ArtifactGenerator,
  attempts: number,
  decidedAtMs: number,
): CloudEvent<unknown> {
  const data: ActionData = {
    namespace: ag.metadata?.namespace ?? '',
    name: ag.metadata?.name ?? '',
    resourceVersion: ag.metadata?.resourceVersion ?? '',
    attempts,
    decidedAt: formatTimeNano(decidedAtMs),
  };
  return cloudEvent({ type, source: ACTION_SOURCE, data });
}

/** The resync PingSource's ping (its data the resync's purpose unless given). */
export const resyncPing = (data: object = { purpose: 'resync' }) =>
  cloudEvent({
    type: PING,
    source: `/apis/v1/namespaces/${RECOVERY_NAMESPACE}/pingsources/resync`,
    data,
  });

export interface Answer {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Headers;
}

export async function postEvent(
  url: string,
  event: CloudEventV1<unknown>,
  mode: Mode = 'binary',
): Promise<Answer> {
  const message = mode === 'binary' ? HTTP.binary(event) : HTTP.structured(event);
  return postRaw(url, message.headers as Record<string, string>, String(message.body));
}

export async function postRaw(
  url: string,
  headers: Record<string, string>,
  body: string | Buffer,
): Promise<Answer> {
  const res = await fetch(url, { method: 'POST', headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** A Broker ingress stand-in that records every CloudEvent it accepts. */
export interface EventSink extends Started {
  readonly events: CloudEventV1<unknown>[];
  /** Answer the next `count` posts with `status` instead of 202. */
  failNext(status: number, count?: number): void;
}

export async function startEventSink(): Promise<EventSink> {
  const events: CloudEventV1<unknown>[] = [];
  let failures: { status: number; left: number } | undefined;
  const started = await startHttp((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (failures !== undefined && failures.left > 0) {
        failures.left--;
        res.statusCode = failures.status;
        res.end();
        return;
      }
      const received = HTTP.toEvent<unknown>({
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      for (const e of Array.isArray(received) ? received : [received]) events.push(e);
      res.statusCode = 202;
      res.end();
    });
  });
  return {
    ...started,
    events,
    failNext(status: number, count = 1) {
      failures = { status, left: count };
    },
  };
}
