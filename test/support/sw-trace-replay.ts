// Replays recorded source-watcher scenarios (test/recorded/source-watcher-v2.1.0/) on the simulator against the real test
// API server, on a virtual clock that follows the recording's timeline: every `action` record is
// performed at its recorded time, mapped onto the simulator's knobs (source revision, lost write,
// slow download) or sent to the API server as recorded (create, spec edit, force, requestedAt).
// It records every request the simulator sent (its request hook) and every AG object from a watch
// of our own, in the terms of the trace so both sides normalise the same way.

import { CustomObjectsApi, PatchStrategy, Watch, setHeaderOptions } from '@kubernetes/client-node';
import { VirtualClock } from '../harness/virtual-clock.js';
import {
  createSourceWatcherSim,
  type SimAg,
  type SimRequest,
  type SourceWatcherSim,
} from '../harness/source-watcher-sim/index.js';
import { ensureNamespace, testKubeConfig, uniqueName } from './apiserver.js';
import { readyInBody, type RequestFacts } from './sw-fidelity-normalise.js';
import { markAt, type Trace, type TraceAction, type TraceAg } from './sw-traces.js';

const GROUP = 'source.extensions.fluxcd.io';
const VERSION = 'v1beta1';
const PLURAL = 'artifactgenerators';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** Virtual time of one build with an undelayed download (the recorded builds took 20-30 ms). */
export const REPLAY_BUILD_MS = 25;
/** Real ms to wait for our watch to deliver a write. */
const WATCH_CATCH_UP_MS = 10_000;

export interface ReplayedRequest extends RequestFacts {
  /** Seconds from the scenario's start (the `scenario-start` mark), virtual time. */
  tRel: number;
}

export interface ReplayWindow {
  /** Per AG (keyed as in the trace): the simulator's write requests in the last scenario. */
  requests: Map<string, ReplayedRequest[]>;
  /** Per AG: the object before the last scenario (when it continues an earlier one), then every watched object. */
  objects: Map<string, TraceAg[]>;
  /** Virtual seconds from `scenario-start` to the `end` mark of the last scenario. */
  endTRel: number;
}

interface Recorded {
  request: SimRequest;
  traceKey: string;
}

class NamespaceMap {
  readonly #map = new Map<string, string>();
  ns(traceNs: string): string {
    let ns = this.#map.get(traceNs);
    if (ns === undefined) {
      ns = uniqueName(`fid-${traceNs}`);
      this.#map.set(traceNs, ns);
    }
    return ns;
  }
  key(traceKey: string): string {
    const [ns = '', name = ''] = traceKey.split('/');
    return `${this.ns(ns)}/${name}`;
  }
  traceKey(key: string): string {
    const [ns = '', name = ''] = key.split('/');
    for (const [t, n] of this.#map) if (n === ns) return `${t}/${name}`;
    return key;
  }
}

/** Our own watch of AG objects in one namespace (independent of the simulator's informer). */
class ObjectRecorder {
  readonly events: SimAg[] = [];
  readonly #seen = new Set<string>();
  #abort: AbortController | undefined;

  constructor(
    private readonly watch: Watch,
    private readonly api: CustomObjectsApi,
    private readonly namespace: string,
  ) {}

  #list(): Promise<{ items: SimAg[]; metadata?: { resourceVersion?: string } }> {
    return this.api.listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      namespace: this.namespace,
    }) as Promise<{ items: SimAg[]; metadata?: { resourceVersion?: string } }>;
  }

  async start(): Promise<void> {
    const list = await this.#list();
    this.#abort = await this.watch.watch(
      `/apis/${GROUP}/${VERSION}/namespaces/${this.namespace}/${PLURAL}`,
      { resourceVersion: list.metadata?.resourceVersion ?? '0' },
      (type, obj: SimAg) => {
        if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return;
        this.events.push(structuredClone(obj));
        if (obj.metadata.resourceVersion) this.#seen.add(obj.metadata.resourceVersion);
      },
      () => undefined,
    );
  }

  stop(): void {
    this.#abort?.abort();
  }

  /** Wait until the watch delivered the current version of every AG in the namespace. */
  async catchUp(): Promise<void> {
    const list = await this.#list();
    const deadline = Date.now() + WATCH_CATCH_UP_MS;
    for (const ag of list.items) {
      const rv = ag.metadata.resourceVersion ?? '';
      while (!this.#seen.has(rv)) {
        if (Date.now() > deadline) throw new Error(`replay: our watch never delivered rv ${rv}`);
        await new Promise((r) => setTimeout(r, 5));
      }
    }
  }
}

function parseAgPath(path: string): {
  namespace: string;
  name?: string;
  status: boolean;
  fieldManager?: string;
} {
  const [p = '', query = ''] = path.split('?');
  const m = /\/namespaces\/([^/]+)\/artifactgenerators(?:\/([^/]+))?(\/status)?$/.exec(p);
  if (!m?.[1]) throw new Error(`replay: not an ArtifactGenerator path: ${path}`);
  const fieldManager = new URLSearchParams(query).get('fieldManager') ?? undefined;
  return {
    namespace: m[1],
    ...(m[2] ? { name: m[2] } : {}),
    status: m[3] !== undefined,
    ...(fieldManager ? { fieldManager } : {}),
  };
}

class Replayer {
  readonly #api: CustomObjectsApi;
  readonly #clock = new VirtualClock();
  readonly #names = new NamespaceMap();
  readonly #recorded: Recorded[] = [];
  readonly #sim: SourceWatcherSim;
  readonly #objects: ObjectRecorder;

  constructor(
    private readonly traces: readonly Trace[],
    namespace: string,
  ) {
    const kubeConfig = testKubeConfig();
    this.#api = kubeConfig.makeApiClient(CustomObjectsApi);
    const simNs = this.#names.ns(namespace);
    this.#sim = createSourceWatcherSim({
      kubeConfig,
      clock: this.#clock,
      namespace: simNs,
      buildTimeMs: REPLAY_BUILD_MS,
      concurrency: 4,
      onRequest: (request) =>
        this.#recorded.push({ request, traceKey: this.#names.traceKey(request.key) }),
    });
    this.#objects = new ObjectRecorder(new Watch(kubeConfig), this.#api, simNs);
  }

  async run(): Promise<ReplayWindow> {
    this.#clock.setSettle(() => this.#sim.settled());
    await this.#objects.start();
    await this.#sim.start();
    try {
      let window: ReplayWindow | undefined;
      for (const trace of this.traces) window = await this.#replayOne(trace);
      if (!window) throw new Error('replay: no trace');
      return window;
    } finally {
      await this.#sim.stop();
      this.#objects.stop();
    }
  }

  async #replayOne(trace: Trace): Promise<ReplayWindow> {
    await this.#objects.catchUp();
    const requestsBefore = this.#recorded.length;
    const objectsBefore = this.#objects.events.length;
    const origin = this.#clock.now() - markAt(trace, 'start') * 1000;
    const atRel = (tRel: number): number => origin + Math.round(tRel * 1000);
    const scenarioStart = atRel(markAt(trace, 'scenario-start'));
    const actions = trace.records.filter((r): r is TraceAction => r.rec === 'action');
    for (const action of actions) {
      await this.#clock.advanceTo(Math.max(this.#clock.now(), atRel(action.tRel)));
      const rv = await this.#perform(trace, action);
      if (rv) await this.#sim.observed(rv);
      await this.#sim.settled();
    }
    const endTRel = markAt(trace, 'end');
    await this.#clock.advanceTo(Math.max(this.#clock.now(), atRel(endTRel)));
    await this.#sim.settled();
    await this.#objects.catchUp();

    const requests = new Map<string, ReplayedRequest[]>();
    for (const { request, traceKey } of this.#recorded.slice(requestsBefore)) {
      if (request.verb === 'get') continue;
      const status = (request.body as { status?: object } | undefined)?.status ?? {};
      const list = requests.get(traceKey) ?? [];
      list.push({
        verb: request.verb,
        subresource: request.subresource,
        code: request.code,
        body: request.body,
        lost: request.lost,
        ...(request.lost
          ? { lostStatusKeys: Object.keys(status).sort(), lostReady: readyInBody(request.body) }
          : {}),
        tRel: (request.at - scenarioStart) / 1000,
      });
      requests.set(traceKey, list);
    }
    const objects = new Map<string, TraceAg[]>();
    const startsFromInitial = trace.records.some((r) => r.rec === 'initial');
    const add = (ag: SimAg): void => {
      const key = this.#names.traceKey(`${ag.metadata.namespace}/${ag.metadata.name}`);
      objects.set(key, [...(objects.get(key) ?? []), ag as TraceAg]);
    };
    if (startsFromInitial) {
      const last = new Map<string, SimAg>();
      for (const ag of this.#objects.events.slice(0, objectsBefore)) last.set(ag.metadata.name, ag);
      for (const ag of last.values()) add(ag);
    }
    for (const ag of this.#objects.events.slice(objectsBefore)) add(ag);
    return { requests, objects, endTRel: endTRel - markAt(trace, 'scenario-start') };
  }

  /** Do what the capture script did. Returns the resourceVersion of an API write. */
  async #perform(trace: Trace, action: TraceAction): Promise<string | undefined> {
    const { what } = action;
    const agsOfTrace = trace.meta.ags.map((k) => this.#names.key(k));
    if (what.startsWith('create GitRepository')) return undefined;
    const revision = /^GitRepository \S+ status\.artifact -> revision (\S+)/.exec(what);
    if (revision?.[1]) {
      for (const key of agsOfTrace) this.#sim.setSourceRevision(key, revision[1]);
      return undefined;
    }
    const fault = /^fault rule added to the proxy: 'once (\S+)'/.exec(what);
    if (fault?.[1]) {
      this.#sim.loseConditionsWrite(this.#names.key(fault[1]), { times: 1 });
      return undefined;
    }
    const delay = /download now delayed ([\d.]+) s/.exec(what);
    if (delay?.[1]) {
      const ms = Number(delay[1]) * 1000;
      for (const key of agsOfTrace) {
        this.#sim.setBuildTimeOf(key, ms > 0 ? ms + REPLAY_BUILD_MS : undefined);
      }
      return undefined;
    }
    if (action.path?.includes('/artifactgenerators')) return this.#sendAsRecorded(action);
    throw new Error(`replay: ${trace.file}: no mapping for the action '${what}'`);
  }

  async #sendAsRecorded(action: TraceAction): Promise<string> {
    const target = parseAgPath(action.path ?? '');
    const namespace = this.#names.ns(target.namespace);
    const body = structuredClone(action.body) as SimAg;
    const base = { group: GROUP, version: VERSION, plural: PLURAL, namespace };
    let out: unknown;
    if (action.method === 'POST') {
      body.metadata.namespace = namespace;
      // kube-apiserver creates nothing in a namespace that does not exist.
      await ensureNamespace(namespace);
      out = await this.#api.createNamespacedCustomObject({ ...base, body });
    } else if (action.method === 'PATCH' && target.name) {
      const name = target.name;
      if (body.metadata?.resourceVersion !== undefined) {
        // The recorded precondition was the then-current version: use ours.
        const current = (await this.#api.getNamespacedCustomObject({ ...base, name })) as SimAg;
        body.metadata.resourceVersion = current.metadata.resourceVersion ?? '';
      }
      const request = {
        ...base,
        name,
        body,
        ...(target.fieldManager ? { fieldManager: target.fieldManager } : {}),
      };
      out = target.status
        ? await this.#api.patchNamespacedCustomObjectStatus(request, mergePatch)
        : await this.#api.patchNamespacedCustomObject(request, mergePatch);
    } else {
      throw new Error(`replay: cannot send ${action.method} ${action.path}`);
    }
    return (out as SimAg).metadata.resourceVersion ?? '';
  }
}

/**
 * Replay the traces in order on one simulator (a later one continues on the AGs of an earlier
 * one, like S3 on S2's AG) and return what happened during the last one.
 */
export async function replayTraces(traces: readonly Trace[]): Promise<ReplayWindow> {
  const first = traces[0]?.meta.ags[0];
  if (!first) throw new Error('replay: no AG in the first trace');
  const namespace = first.split('/')[0] ?? '';
  for (const t of traces) {
    for (const key of t.meta.ags) {
      if (!key.startsWith(`${namespace}/`)) {
        throw new Error(`replay: ${t.file}: every AG must be in namespace ${namespace}`);
      }
    }
  }
  return new Replayer(traces, namespace).run();
}
