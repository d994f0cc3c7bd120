// TokenReview: asks the API server who a bearer token belongs to, for which audiences
// (authentication.k8s.io/v1, `create tokenreviews`; docs/adr/0056). The token goes in the request
// body only, never into a message or a log. Failures are typed (errors.ts): a timeout, 429 or 5xx
// is a TransientError, a missing RBAC rule a ForbiddenError.

import type { KubeConfig } from '@kubernetes/client-node';
import type { ReviewedToken } from '../core/access/sender-auth.js';
import { toKubeError, type RequestTarget } from './errors-map.js';
import { createCall, type Call } from './rest-call.js';
import { createTransport, type KubeConfigSource } from './transport.js';

export interface TokenReviewer {
  review(token: string, audiences: readonly string[]): Promise<ReviewedToken>;
}

const TARGET: RequestTarget = { verb: 'create', resource: 'tokenreviews' };

interface TokenReviewStatus {
  status?: {
    authenticated?: unknown;
    user?: { username?: unknown };
    audiences?: unknown;
  };
}

/** The reviewer on a Call (the transport of the function's own ServiceAccount). */
export function tokenReviewerOn(call: Call): TokenReviewer {
  return {
    async review(token, audiences) {
      const answer = await call<TokenReviewStatus>(TARGET, {
        method: 'POST',
        path: '/apis/authentication.k8s.io/v1/tokenreviews',
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenReview',
          spec: { token, audiences: [...audiences] },
        },
      });
      const status = answer.status;
      if (status === undefined || typeof status !== 'object' || status === null) {
        throw toKubeError({ kind: 'decode', statusCode: 201 }, TARGET);
      }
      const username = status.user?.username;
      return {
        authenticated: status.authenticated === true,
        username: typeof username === 'string' ? username : undefined,
        audiences: Array.isArray(status.audiences)
          ? status.audiences.filter((a): a is string => typeof a === 'string')
          : [],
      };
    },
  };
}

export function createTokenReviewer(opts: {
  /** The kubeconfig, or its loader (read at the first request: transport.ts). */
  kubeConfig: KubeConfig | KubeConfigSource;
  requestTimeoutMs: number;
}): TokenReviewer {
  return tokenReviewerOn(createCall(createTransport(opts.kubeConfig, opts.requestTimeoutMs)));
}
