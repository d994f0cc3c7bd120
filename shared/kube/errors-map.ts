// Turns every way a Kubernetes request can fail into one of the typed errors in errors.ts.
// Pure: the transport describes the failure as plain data and this file decides the kind and the
// message. Messages name the verb, the resource and the object, plus the API server's
// Status.message when there is one. They never carry request headers, tokens, keys or
// certificates, and the raw error is never attached as `cause`.

import {
  ConflictError,
  ForbiddenError,
  InvalidError,
  type KubeError,
  NotFoundError,
  TransientError,
} from './errors.js';

/** What was being attempted, for the message. */
export interface RequestTarget {
  /** get, list, create, patch, patch-status, delete. */
  verb: string;
  /** The resource plural, e.g. artifactgenerators. */
  resource: string;
  namespace?: string;
  name?: string;
}

/** How a request failed, as plain data. */
export type RequestFailure =
  /** The API server answered with a non-2xx status. `body` is the raw response text. */
  | { kind: 'http'; statusCode: number; body: string }
  /** No answer: connection refused or reset, DNS, TLS, socket hang up, abort. */
  | { kind: 'transport'; code?: string; message: string }
  /** No complete answer within the per-request timeout. */
  | { kind: 'timeout'; timeoutMs: number }
  /** A 2xx answer whose body is not the JSON object expected. */
  | { kind: 'decode'; statusCode: number }
  /** The credentials or TLS settings could not be prepared for the request. */
  | { kind: 'credentials'; code?: string }
  /** The delivery the request belonged to ended (deadline, client gone): cut or never sent. */
  | { kind: 'aborted' };

const MAX_DETAIL_CHARS = 512;

export function describeTarget(t: RequestTarget): string {
  const where =
    t.name !== undefined
      ? t.namespace !== undefined
        ? `${t.namespace}/${t.name}`
        : t.name
      : t.namespace !== undefined
        ? `in namespace ${t.namespace}`
        : 'in all namespaces';
  return `${t.verb} ${t.resource} ${where}`;
}

/** The kind of error an HTTP status maps to. */
export function kindForStatus(statusCode: number): KubeError['kind'] {
  if (statusCode === 404) return 'NotFound';
  // 409: a stale resourceVersion precondition, or AlreadyExists on create.
  // 410: an expired continue token or resourceVersion; the caller re-reads from scratch.
  if (statusCode === 409 || statusCode === 410) return 'Conflict';
  if (statusCode === 401 || statusCode === 403) return 'Forbidden';
  if (statusCode === 408 || statusCode === 429) return 'Transient';
  if (statusCode >= 400 && statusCode < 500) return 'Invalid';
  // 5xx, and anything a Kubernetes API server should never answer (1xx, 3xx).
  return 'Transient';
}

/** Status.reason and Status.message from a Kubernetes Status body; nothing from other bodies. */
export function statusDetail(body: string): { reason?: string; message?: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return {};
  }
  if (typeof parsed !== 'object' || parsed === null) return {};
  const status = parsed as { kind?: unknown; reason?: unknown; message?: unknown };
  if (status.kind !== 'Status') return {};
  const out: { reason?: string; message?: string } = {};
  if (typeof status.reason === 'string' && status.reason !== '') out.reason = clip(status.reason);
  if (typeof status.message === 'string' && status.message !== '') {
    out.message = clip(status.message);
  }
  return out;
}

export function toKubeError(failure: RequestFailure, target: RequestTarget): KubeError {
  const what = describeTarget(target);
  switch (failure.kind) {
    case 'http': {
      const { reason, message } = statusDetail(failure.body);
      const head = `${what} failed: HTTP ${failure.statusCode}${reason !== undefined ? ` ${reason}` : ''}`;
      const text = message !== undefined ? `${head}: ${message}` : head;
      return errorOfKind(kindForStatus(failure.statusCode), text, failure.statusCode);
    }
    case 'transport': {
      const code = failure.code !== undefined ? ` (${clip(failure.code)})` : '';
      return new TransientError(
        `${what} failed: no answer from the API server${code}: ${clip(failure.message)}`,
      );
    }
    case 'timeout':
      return new TransientError(
        `${what} failed: no answer from the API server within ${failure.timeoutMs} ms`,
      );
    case 'decode':
      return new TransientError(
        `${what} failed: HTTP ${failure.statusCode} answer is not the expected JSON object`,
        failure.statusCode,
      );
    case 'credentials': {
      const code = failure.code !== undefined ? ` (${clip(failure.code)})` : '';
      return new TransientError(
        `${what} failed: could not prepare the kubeconfig credentials${code}`,
      );
    }
    case 'aborted':
      return new TransientError(
        `${what} abandoned: its delivery has ended (deadline or client gone)`,
      );
  }
}

function errorOfKind(kind: KubeError['kind'], message: string, statusCode: number): KubeError {
  switch (kind) {
    case 'NotFound':
      return new NotFoundError(message, statusCode);
    case 'Conflict':
      return new ConflictError(message, statusCode);
    case 'Invalid':
      return new InvalidError(message, statusCode);
    case 'Forbidden':
      return new ForbiddenError(message, statusCode);
    case 'Transient':
      return new TransientError(message, statusCode);
  }
}

function clip(s: string): string {
  // One line, bounded: an answer must not flood a log line.
  // eslint-disable-next-line no-control-regex
  const oneLine = s.replace(/[\u0000-\u001f\u007f]+/g, ' ');
  return oneLine.length > MAX_DETAIL_CHARS ? `${oneLine.slice(0, MAX_DETAIL_CHARS)}…` : oneLine;
}
