// Typed Kubernetes errors. The adapter converts every failure into one of these; nothing above the
// adapter sees a raw HTTP status from the API server.

export type KubeErrorKind = 'NotFound' | 'Conflict' | 'Invalid' | 'Forbidden' | 'Transient';

export class KubeError extends Error {
  readonly kind: KubeErrorKind;
  /** The API server's HTTP status, for logs only; never an HTTP status of a function. */
  readonly statusCode: number | undefined;

  constructor(
    kind: KubeErrorKind,
    message: string,
    statusCode?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = `Kube${kind}Error`;
    this.kind = kind;
    this.statusCode = statusCode;
  }
}

export class NotFoundError extends KubeError {
  constructor(message: string, statusCode = 404, options?: { cause?: unknown }) {
    super('NotFound', message, statusCode, options);
  }
}
export class ConflictError extends KubeError {
  constructor(message: string, statusCode = 409, options?: { cause?: unknown }) {
    super('Conflict', message, statusCode, options);
  }
}
export class InvalidError extends KubeError {
  constructor(message: string, statusCode = 422, options?: { cause?: unknown }) {
    super('Invalid', message, statusCode, options);
  }
}
export class ForbiddenError extends KubeError {
  constructor(message: string, statusCode = 403, options?: { cause?: unknown }) {
    super('Forbidden', message, statusCode, options);
  }
}
/** 5xx, 429, timeouts, connection errors: worth retrying later. */
export class TransientError extends KubeError {
  constructor(message: string, statusCode?: number, options?: { cause?: unknown }) {
    super('Transient', message, statusCode, options);
  }
}

export function isKubeError(e: unknown, kind?: KubeErrorKind): e is KubeError {
  return e instanceof KubeError && (kind === undefined || e.kind === kind);
}
