// The progress log of an end-to-end run: for each ArtifactGenerator, the virtual times of what
// happened to it (stall, forces, recovery, give-up, PackageSource verdict). It is fed from three
// places, none of them the product's own code: every AG version (a watch of the harness), every
// PackageSource version (another watch), the simulator's "conditions write lost" log, and the
// action events the Broker ingested. The strings below are docs/design.md's, written out on purpose (not
// imported from shared/core) so a typo in the product cannot hide itself.

export const REQUESTED_AT = 'reconcile.fluxcd.io/requestedAt';
export const ATTEMPTS = 'cozystack.io/source-watcher-recovery-attempts';
export const LAST_RECOVERY_AT = 'cozystack.io/source-watcher-last-recovery-at';
export const REASON_FORCED = 'SourceWatcherRecoveryForced';
export const REASON_AWAITING = 'AwaitingSourceWatcherRecovery';
export const REASON_STALLED = 'SourceWatcherStalled';
export const ACTION_STALLED_TYPE = 'io.cozystack.sourcewatcher.stalled';

export type ProgressKind =
  /** The AG was present when the harness started watching (created before the system). */
  | 'present'
  /** The simulator lost a conditions write of this AG (the fluxcd/pkg#934 failure). */
  | 'stall'
  /** A force was claimed: the attempts annotation took a new value. */
  | 'force'
  /** requestedAt changed: the signal that makes source-watcher reconcile. */
  | 'bump'
  /** Ready=True with both tracking annotations gone, after a stall or a force. */
  | 'recovered'
  /** Ready=False with a real (upstream) reason. */
  | 'failed'
  /** detect emitted the stalled action (the final window closed). */
  | 'give-up'
  /** The owning PackageSource's Ready turned False/SourceWatcherStalled. */
  | 'stalled'
  | 'deleted';

export interface ProgressEvent {
  /** Virtual epoch ms. */
  readonly at: number;
  /** `namespace/name` of the AG. */
  readonly ag: string;
  readonly kind: ProgressKind;
  /** For force: the attempt claimed. */
  readonly attempt?: number;
  /** For failed / stalled: the condition reason. */
  readonly reason?: string;
}

export interface ForceRecord {
  readonly attempt: number;
  /** The claim's time (the last-recovery-at annotation, virtual epoch ms). */
  readonly claimedAt: number;
  /** When requestedAt was set to the claim's timestamp, if it was. */
  bumpedAt: number | null;
}

export interface AgProgress {
  readonly ag: string;
  /** The controlling PackageSource's name, when the AG has one. */
  packageSource: string | null;
  readonly stalls: number[];
  readonly forces: ForceRecord[];
  /** Every requestedAt change, virtual epoch ms. */
  readonly bumps: number[];
  readonly recoveries: number[];
  readonly failures: { at: number; reason: string }[];
  readonly giveUps: number[];
  /** First time the PackageSource showed SourceWatcherStalled. */
  stalledAt: number | null;
  deletedAt: number | null;
}

export interface ConditionSnapshot {
  readonly at: number;
  readonly resourceVersion: string;
  readonly status: string | undefined;
  readonly reason: string | undefined;
  readonly message: string | undefined;
  readonly lastTransitionTime: string | undefined;
  readonly observedGeneration: number | undefined;
}

/** One AG version as the harness saw it. */
export interface AgVersion extends ConditionSnapshot {
  readonly generation: number | undefined;
  readonly annotations: Readonly<Record<string, string>>;
  readonly deleted: boolean;
}

type Obj = {
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    generation?: number;
    annotations?: Record<string, string>;
    ownerReferences?: { kind?: string; name?: string; controller?: boolean }[];
  };
  status?: { conditions?: Record<string, unknown>[] };
};

interface AgState {
  attempts: string | undefined;
  requestedAt: string | undefined;
  readyKey: string;
  open: boolean;
}

/** Epoch ms of an RFC 3339 timestamp (any number of fraction digits), or null. */
export function parseRfc3339(text: unknown): number | null {
  if (typeof text !== 'string') return null;
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?Z$/.exec(text);
  if (m === null) return null;
  const base = Date.parse(`${m[1] ?? ''}Z`);
  if (!Number.isFinite(base)) return null;
  return base + Number((m[2] ?? '').slice(0, 3).padEnd(3, '0'));
}

function readyOf(obj: Obj): Record<string, unknown> | undefined {
  return obj.status?.conditions?.find((c) => c['type'] === 'Ready');
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function snapshot(obj: Obj, at: number): ConditionSnapshot {
  const ready = readyOf(obj);
  const og = ready?.['observedGeneration'];
  return {
    at,
    resourceVersion: obj.metadata?.resourceVersion ?? '',
    status: str(ready?.['status']),
    reason: str(ready?.['reason']),
    message: str(ready?.['message']),
    lastTransitionTime: str(ready?.['lastTransitionTime']),
    observedGeneration: typeof og === 'number' ? og : undefined,
  };
}

export function agKeyOf(obj: Obj): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

function controllingPackageSource(obj: Obj): string | null {
  const ref = obj.metadata?.ownerReferences?.find(
    (r) => r.controller === true && r.kind === 'PackageSource',
  );
  return ref?.name ?? null;
}

export class ProgressLog {
  readonly events: ProgressEvent[] = [];
  readonly #progress = new Map<string, AgProgress>();
  readonly #state = new Map<string, AgState>();
  readonly #agVersions = new Map<string, AgVersion[]>();
  readonly #psVersions = new Map<string, ConditionSnapshot[]>();
  readonly #psOwner = new Map<string, string>();
  readonly #onEvent: ((e: ProgressEvent) => void) | undefined;

  constructor(onEvent?: (e: ProgressEvent) => void) {
    this.#onEvent = onEvent;
  }

  /** The progress of one AG (`namespace/name`); an empty record when nothing was seen. */
  of(ag: string): AgProgress {
    return this.#progress.get(ag) ?? emptyProgress(ag);
  }

  /** Every version of the AG the harness saw, oldest first (deletion last). */
  agVersions(ag: string): readonly AgVersion[] {
    return this.#agVersions.get(ag) ?? [];
  }

  /** Every Ready condition the PackageSource carried, one entry per version, oldest first. */
  packageSourceVersions(name: string): readonly ConditionSnapshot[] {
    return this.#psVersions.get(name) ?? [];
  }

  // ---- feeds ----------------------------------------------------------------------------------

  /** An AG version: listed at start (`present`), or a watch event. */
  onAg(obj: Obj, at: number, how: 'listed' | 'changed' | 'deleted'): void {
    const key = agKeyOf(obj);
    const p = this.#entry(key);
    const ps = controllingPackageSource(obj);
    if (ps !== null) {
      p.packageSource = ps;
      this.#psOwner.set(ps, key);
    }
    const versions = this.#agVersions.get(key) ?? [];
    versions.push({
      ...snapshot(obj, at),
      generation: obj.metadata?.generation,
      annotations: { ...(obj.metadata?.annotations ?? {}) },
      deleted: how === 'deleted',
    });
    this.#agVersions.set(key, versions);
    if (how === 'deleted') {
      p.deletedAt = at;
      this.#emit({ at, ag: key, kind: 'deleted' });
      return;
    }
    if (how === 'listed') this.#emit({ at, ag: key, kind: 'present' });

    const state = this.#state.get(key) ?? {
      attempts: undefined,
      requestedAt: undefined,
      readyKey: '',
      open: false,
    };
    this.#state.set(key, state);
    const annotations = obj.metadata?.annotations ?? {};
    const attempts = annotations[ATTEMPTS];
    const requestedAt = annotations[REQUESTED_AT];
    if (attempts !== undefined && attempts !== state.attempts && how === 'changed') {
      const attempt = Number(attempts);
      const claimedAt = parseRfc3339(annotations[LAST_RECOVERY_AT]) ?? at;
      p.forces.push({ attempt, claimedAt, bumpedAt: null });
      state.open = true;
      this.#emit({ at: claimedAt, ag: key, kind: 'force', attempt });
    }
    if (requestedAt !== undefined && requestedAt !== state.requestedAt && how === 'changed') {
      p.bumps.push(at);
      const bumped = parseRfc3339(requestedAt);
      const force = p.forces.find((f) => f.claimedAt === bumped && f.bumpedAt === null);
      if (force !== undefined) force.bumpedAt = at;
      this.#emit({ at, ag: key, kind: 'bump' });
    }
    state.attempts = attempts;
    state.requestedAt = requestedAt;

    const ready = readyOf(obj);
    const status = str(ready?.['status']);
    const reason = str(ready?.['reason']);
    const readyKey = `${status ?? ''}/${reason ?? ''}`;
    const tracking = attempts !== undefined || annotations[LAST_RECOVERY_AT] !== undefined;
    if (status === 'True' && !tracking && state.open) {
      state.open = false;
      p.recoveries.push(at);
      this.#emit({ at, ag: key, kind: 'recovered' });
    }
    if (status === 'False' && reason !== REASON_FORCED && readyKey !== state.readyKey) {
      p.failures.push({ at, reason: reason ?? '' });
      this.#emit({ at, ag: key, kind: 'failed', reason: reason ?? '' });
    }
    state.readyKey = readyKey;
  }

  /** A PackageSource version (listed or changed). */
  onPackageSource(obj: Obj, at: number): void {
    const name = obj.metadata?.name ?? '';
    const versions = this.#psVersions.get(name) ?? [];
    const snap = snapshot(obj, at);
    const previous = versions[versions.length - 1];
    versions.push(snap);
    this.#psVersions.set(name, versions);
    const ag = this.#psOwner.get(name);
    if (ag === undefined || snap.reason !== REASON_STALLED || previous?.reason === REASON_STALLED) {
      return;
    }
    const p = this.#entry(ag);
    p.stalledAt ??= at;
    this.#emit({ at, ag, kind: 'stalled', reason: REASON_STALLED });
  }

  /** The simulator lost a conditions write of `ag`. */
  onLostWrite(ag: string, at: number): void {
    const p = this.#entry(ag);
    p.stalls.push(at);
    const state = this.#state.get(ag);
    if (state !== undefined) state.open = true;
    else
      this.#state.set(ag, {
        attempts: undefined,
        requestedAt: undefined,
        readyKey: '',
        open: true,
      });
    this.#emit({ at, ag, kind: 'stall' });
  }

  /** detect emitted the stalled action for `ag` (duplicates within one cycle are folded). */
  onGiveUp(ag: string, at: number): void {
    const p = this.#entry(ag);
    const lastForce = p.forces[p.forces.length - 1]?.claimedAt ?? -Infinity;
    const lastGiveUp = p.giveUps[p.giveUps.length - 1] ?? -Infinity;
    if (lastGiveUp >= lastForce) return;
    p.giveUps.push(at);
    this.#emit({ at, ag, kind: 'give-up' });
  }

  #entry(key: string): AgProgress {
    let p = this.#progress.get(key);
    if (p === undefined) {
      p = emptyProgress(key);
      this.#progress.set(key, p);
    }
    return p;
  }

  #emit(e: ProgressEvent): void {
    this.events.push(e);
    this.#onEvent?.(e);
  }
}

function emptyProgress(ag: string): AgProgress {
  return {
    ag,
    packageSource: null,
    stalls: [],
    forces: [],
    bumps: [],
    recoveries: [],
    failures: [],
    giveUps: [],
    stalledAt: null,
    deletedAt: null,
  };
}
