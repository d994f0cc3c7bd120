// A Knative ApiServerSource in Resource mode, on a real watch. Each watch event becomes the
// CloudEvent Knative sends: type dev.knative.apiserver.resource.add|update|delete, source = the
// API server URL, subject = /apis/<apiVersion>/namespaces/<ns>/<plural>/<name>, a fresh UUID id,
// extensions kind / apiversion / name / namespace, data = the whole object (application/json).
// Like the real adapter it sends nothing for the objects a list returns (at start or on a
// re-list after 410 Gone) and never resyncs. Events are sent one at a time, in watch order, in
// binary mode to the sink (the Broker ingress); a send that fails (non-2xx or transport error)
// is retried a few times and then dropped.

import { setMaxListeners } from 'node:events';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  APISERVER_ADD,
  APISERVER_DELETE,
  APISERVER_UPDATE,
} from '../../../shared/core/objects/cloudevent-types.js';
import { AG_API_GROUP, AG_PLURAL } from '../../../shared/core/objects/types.js';
import type { EmuClock } from './clock.js';
import { apiServerSourceEvent } from './apiserver-source-event.js';
import { postBinary } from './cloudevent-http.js';
import { sourceBearer, type OidcTokenSource } from './oidc-tokens.js';
import type { AnyEvent } from './cloudevent-http.js';
import { ListWatch, listCatchUp } from './list-watch.js';
import type { CatchUp, KubeObject, ResourceRef, WatchEventType } from './list-watch.js';
import { PendingWork, sleep } from './pending.js';

export interface ApiServerSourceOptions {
  kubeConfig: KubeConfig;
  /** The sink (Broker ingress) URL, or a getter read at each send. */
  sinkUrl: string | (() => string);
  /** The watched resource (default: ArtifactGenerators, all namespaces). */
  resource?: ResourceRef;
  /**
   * Sets the CloudEvent `time` (virtual time); real time when absent. A full clock (with
   * setTimer) also carries the list-watch's backoff (docs/adr/0060).
   */
  clock?: Pick<EmuClock, 'now'> | EmuClock;
  /** The client of the harness's catch-up lists (default: the source's own). */
  catchUpKubeConfig?: KubeConfig;
  /** Seed of the list-watch's backoff jitter (default 1). */
  seed?: number;
  /** Real ms between send attempts (default 20). */
  retryDelayMs?: number;
  log?: (msg: string, fields: Record<string, unknown>) => void;
  /**
   * OIDC on (docs/adr/0056): each send carries a token of this ApiServerSource's OIDC identity
   * (its name in knative/) for the Broker's audience.
   */
  oidc?: { tokens: OidcTokenSource; name: string; audience: string };
}

export interface SourceSendRecord {
  event: AnyEvent;
  attempts: number;
  /** Last HTTP status; undefined for a transport error. */
  status: number | undefined;
  outcome: 'sent' | 'dropped';
}

const TYPES: Record<WatchEventType, string> = {
  ADDED: APISERVER_ADD,
  MODIFIED: APISERVER_UPDATE,
  DELETED: APISERVER_DELETE,
};

export const AG_RESOURCE: ResourceRef = {
  group: AG_API_GROUP,
  version: 'v1beta1',
  plural: AG_PLURAL,
};

/** Flux ExternalArtifacts (functions/heal-external-artifacts). */
export const EA_RESOURCE: ResourceRef = {
  group: 'source.toolkit.fluxcd.io',
  version: 'v1',
  plural: 'externalartifacts',
};

export class ApiServerSource {
  /** Every event handled, in watch order, with how its send ended. */
  readonly sent: SourceSendRecord[] = [];
  readonly #opts: ApiServerSourceOptions;
  readonly #watch: ListWatch;
  readonly #pending = new PendingWork();
  readonly #abort = new AbortController();
  readonly #plural: string;
  readonly #serverUrl: string;
  /** The tail of the in-order send chain. */
  #chain: Promise<void> = Promise.resolve();

  constructor(opts: ApiServerSourceOptions) {
    this.#opts = opts;
    setMaxListeners(0, this.#abort.signal);
    const resource = opts.resource ?? AG_RESOURCE;
    this.#plural = resource.plural;
    const cluster = opts.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('ApiServerSource: the kubeconfig has no current cluster');
    this.#serverUrl = cluster.server;
    const clock = opts.clock;
    this.#watch = new ListWatch(
      opts.kubeConfig,
      resource,
      { onEvent: (type, obj) => this.#enqueue(type, obj) },
      {
        ...(opts.log ? { log: opts.log } : {}),
        ...(clock !== undefined && 'setTimer' in clock ? { clock } : {}),
        ...(opts.catchUpKubeConfig ? { catchUpKubeConfig: opts.catchUpKubeConfig } : {}),
        ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
      },
    );
  }

  /** Lists (sending nothing) and watches; resolves once the watch is established. */
  start(): Promise<void> {
    return this.#watch.start();
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#watch.stop();
    await this.#pending.idle();
  }

  /** Watch events received so far. */
  get received(): number {
    return this.#watch.events;
  }

  /** Resolves when every event received so far has been sent or dropped. */
  idle(): Promise<void> {
    return this.#pending.idle();
  }

  /**
   * Resolves once every change visible in a fresh list has come through the watch (or, with
   * `how`, every change that catch-up waits for).
   */
  caughtUp(timeoutMs?: number, how: CatchUp = listCatchUp): Promise<boolean> {
    return how(this.#watch, timeoutMs ?? 10_000);
  }

  /** The list-watch (its phase, re-lists and backoffs). */
  get listWatch(): ListWatch {
    return this.#watch;
  }

  /** The CloudEvent Knative makes of one watch event. */
  makeEvent(type: WatchEventType, obj: KubeObject): AnyEvent {
    return apiServerSourceEvent({
      type: TYPES[type],
      obj,
      plural: this.#plural,
      server: this.#serverUrl,
      now: this.#opts.clock ? this.#opts.clock.now() : Date.now(),
    });
  }

  #enqueue(type: WatchEventType, obj: KubeObject): void {
    const event = this.makeEvent(type, obj);
    const send = this.#chain.then(() => this.#send(event));
    this.#chain = send;
    void this.#pending.track(send);
  }

  async #send(event: AnyEvent): Promise<void> {
    const attempts = 5; // send attempts before an event is dropped
    const signal = this.#abort.signal;
    let status: number | undefined;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (signal.aborted) break;
      const sink =
        typeof this.#opts.sinkUrl === 'function' ? this.#opts.sinkUrl() : this.#opts.sinkUrl;
      const out = await postBinary(sink, event, {
        timeoutMs: 10_000,
        signal,
        ...(await sourceBearer(this.#opts.oidc, 'ApiServerSource')),
      });
      status = out.status;
      if (status !== undefined && status >= 200 && status < 300) {
        this.sent.push({ event, attempts: attempt, status, outcome: 'sent' });
        return;
      }
      this.#opts.log?.('apiserversource send failed', {
        id: event.id,
        type: event.type,
        subject: event.subject,
        attempt,
        status,
        error: out.error,
      });
      if (attempt < attempts) await sleep(this.#opts.retryDelayMs ?? 20, signal);
    }
    this.sent.push({ event, attempts, status, outcome: 'dropped' });
    this.#opts.log?.('apiserversource dropped event', {
      id: event.id,
      type: event.type,
      subject: event.subject,
      status,
    });
  }
}
