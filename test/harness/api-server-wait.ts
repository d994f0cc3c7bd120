// `npm start -- --kubeconfig`: before anything starts, wait for the API server the kubeconfig
// names to answer a list of ArtifactGenerators (what detect's sweep needs) as the kubeconfig's
// user. No answer, a timeout, 429 or 5xx: one line (`waiting for the API server at URL: <reason>;
// retrying in Ns`) and another try, up to the wait's bound, then a clear error. 401 or 403: a
// clear error naming the kubeconfig's user at once (waiting does not change that answer), as for
// an API server that does not serve ArtifactGenerators or credentials that cannot be prepared.

import type { KubeConfig } from '@kubernetes/client-node';
import { AG_API_VERSION, AG_PLURAL } from '../../shared/core/objects/types.js';
import { createTransport, type HttpOutcome } from '../../shared/kube/transport.js';

/** `--wait-seconds`' default. */
export const DEFAULT_WAIT_SECONDS = 180;
const FIRST_RETRY_MS = 1000;
const MAX_RETRY_MS = 5000;
const ATTEMPT_TIMEOUT_MS = 5000;
const MAX_DETAIL_CHARS = 300;

export const PROBE_PATH = `/apis/${AG_API_VERSION}/${AG_PLURAL}`;

export type ProbeVerdict =
  { kind: 'ready' } | { kind: 'retry'; reason: string } | { kind: 'fatal'; message: string };

/** Who asked where: the kubeconfig's server and its current user's name. */
export interface ProbeTarget {
  readonly server: string;
  readonly user: string;
  /** Whether the user brings a credential of its own (false behind an authenticating proxy). */
  readonly hasCredentials: boolean;
}

/** What one answer to the probe means for the start (pure). */
export function judgeProbe(outcome: HttpOutcome, t: ProbeTarget): ProbeVerdict {
  const user = `kubeconfig user "${t.user}"`;
  switch (outcome.kind) {
    case 'transport':
      return {
        kind: 'retry',
        reason: outcome.message !== '' ? outcome.message : (outcome.code ?? 'no answer'),
      };
    case 'timeout':
      return { kind: 'retry', reason: `no answer within ${outcome.timeoutMs} ms` };
    case 'credentials':
      return {
        kind: 'fatal',
        message: `the credentials of ${user} could not be prepared${outcome.code !== undefined ? ` (${outcome.code})` : ''}: check its token, client certificate or exec plugin`,
      };
    case 'aborted':
      return { kind: 'retry', reason: 'the probe was aborted' };
    case 'response':
      break;
  }
  const code = outcome.statusCode;
  const detail = statusMessage(outcome.body);
  const said = detail === '' ? '' : `: ${detail}`;
  if (code >= 200 && code < 300) return { kind: 'ready' };
  if (code === 401) {
    const hint = t.hasCredentials
      ? ''
      : ' (the user has no credentials of its own: does the proxy in front of the API server add them?)';
    return {
      kind: 'fatal',
      message: `the API server at ${t.server} does not accept the credentials of ${user} (401 Unauthorized${said})${hint}`,
    };
  }
  if (code === 403) {
    return {
      kind: 'fatal',
      message: `${user} may not list ArtifactGenerators at ${t.server} (403 Forbidden${said}); the functions need the RBAC of knative/`,
    };
  }
  if (code === 404) {
    return {
      kind: 'fatal',
      message: `the API server at ${t.server} does not serve ArtifactGenerators (${AG_API_VERSION}): install source-watcher's CRDs first`,
    };
  }
  if (code === 408 || code === 429 || code >= 500) {
    return { kind: 'retry', reason: `HTTP ${code}${said}` };
  }
  return {
    kind: 'fatal',
    message: `the API server at ${t.server} answered a list of ArtifactGenerators as ${user} with HTTP ${code}${said}`,
  };
}

/** The Status message of an API server's answer, shortened; '' when there is none. */
function statusMessage(body: string): string {
  let message: unknown;
  try {
    message = (JSON.parse(body) as { message?: unknown } | null)?.message;
  } catch {
    return '';
  }
  if (typeof message !== 'string') return '';
  return message.length > MAX_DETAIL_CHARS ? `${message.slice(0, MAX_DETAIL_CHARS)}…` : message;
}

/** The pause before retry number `n` (0-based): 1 s, 2 s, 4 s, then 5 s. */
export function retryDelayMs(n: number): number {
  return Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** n);
}

export interface WaitForApiServerOptions {
  readonly kubeConfig: KubeConfig;
  readonly target: ProbeTarget;
  /** Give up after this many ms from the first try. */
  readonly waitMs: number;
  readonly say: (line: string) => void;
  /** Ends the wait early, resolved (e.g. Ctrl-C): checked between tries. */
  readonly stopped?: () => boolean;
}

const POLL_MS = 100;

/**
 * Resolves once the API server answers the probe (or `stopped` says so); rejects with a clear
 * error otherwise.
 */
export async function waitForApiServer(opts: WaitForApiServerOptions): Promise<void> {
  const send = createTransport(opts.kubeConfig, ATTEMPT_TIMEOUT_MS);
  const deadline = Date.now() + opts.waitMs;
  for (let attempt = 0; ; attempt++) {
    const verdict = judgeProbe(
      await send({ method: 'GET', path: PROBE_PATH, query: { limit: '1' } }),
      opts.target,
    );
    if (verdict.kind === 'ready' || opts.stopped?.() === true) return;
    if (verdict.kind === 'fatal') throw new Error(verdict.message);
    const left = deadline - Date.now();
    if (left <= 0) {
      throw new Error(
        `the API server at ${opts.target.server} did not answer within ${Number((opts.waitMs / 1000).toFixed(1))} s (last: ${verdict.reason}); start it, or wait longer with --wait-seconds`,
      );
    }
    const pause = Math.min(retryDelayMs(attempt), left);
    opts.say(
      `waiting for the API server at ${opts.target.server}: ${verdict.reason}; retrying in ${Number((pause / 1000).toFixed(1))}s`,
    );
    const until = Date.now() + pause;
    while (Date.now() < until && opts.stopped?.() !== true) {
      await new Promise((r) => setTimeout(r, Math.min(POLL_MS, until - Date.now())));
    }
    if (opts.stopped?.() === true) return;
  }
}
