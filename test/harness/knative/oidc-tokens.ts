// The tokens Knative Eventing's senders attach when authentication-oidc is on (docs/adr/0056):
// per sender resource a ServiceAccount named as Eventing names it (oidc-identity.ts), created on
// first use as Eventing's controllers do, and a TokenRequest for it with the receiver's audience,
// an hour long, reused until 5 minutes before it expires (pkg/auth OIDCTokenProvider). The client
// is Knative's controller (the admin in the test world); the tokens are real, signed by the test
// kube-apiserver, so the functions' TokenReview checks them for real.

import * as k8s from '@kubernetes/client-node';
import { oidcServiceAccountName } from './oidc-identity.js';

/** Knative's token lifetime and the margin it renews before expiry. */
export const TOKEN_SECONDS = 3600;
const RENEW_BEFORE_MS = 5 * 60 * 1000;

export interface OidcSender {
  readonly group: string;
  readonly kind: string;
  readonly name: string;
}

export interface OidcTokenSource {
  /** A token of `sender`'s OIDC identity for `audience`. */
  tokenFor(sender: OidcSender, audience: string): Promise<string>;
}

export class OidcTokenProvider implements OidcTokenSource {
  /** TokenRequests made (a cached token makes none). */
  requests = 0;
  readonly #core: k8s.CoreV1Api;
  readonly #namespace: string;
  readonly #accounts = new Map<string, Promise<void>>();
  readonly #tokens = new Map<string, { token: string; renewAt: number }>();
  readonly #expirationSeconds: number;

  constructor(opts: { kubeConfig: k8s.KubeConfig; namespace: string; expirationSeconds?: number }) {
    this.#core = opts.kubeConfig.makeApiClient(k8s.CoreV1Api);
    this.#namespace = opts.namespace;
    this.#expirationSeconds = opts.expirationSeconds ?? TOKEN_SECONDS;
  }

  /** The ServiceAccount name of `sender` (Eventing's OIDC identity). */
  accountOf(sender: OidcSender): string {
    return oidcServiceAccountName(sender.group, sender.kind, sender.name);
  }

  async tokenFor(sender: OidcSender, audience: string): Promise<string> {
    const account = this.accountOf(sender);
    const key = `${account}/${audience}`;
    const cached = this.#tokens.get(key);
    if (cached !== undefined && Date.now() < cached.renewAt) return cached.token;
    await this.#ensureAccount(account, sender);
    this.requests += 1;
    const answer = await this.#core.createNamespacedServiceAccountToken({
      name: account,
      namespace: this.#namespace,
      body: { spec: { audiences: [audience], expirationSeconds: this.#expirationSeconds } },
    });
    const token = answer.status?.token;
    if (token === undefined || token === '') throw new Error(`no token for ${account}`);
    const expires = answer.status?.expirationTimestamp;
    const expiresAt =
      expires !== undefined
        ? new Date(expires).getTime()
        : Date.now() + this.#expirationSeconds * 1000;
    this.#tokens.set(key, { token, renewAt: expiresAt - RENEW_BEFORE_MS });
    return token;
  }

  #ensureAccount(account: string, sender: OidcSender): Promise<void> {
    let made = this.#accounts.get(account);
    if (made === undefined) {
      made = this.#core
        .createNamespacedServiceAccount({
          namespace: this.#namespace,
          body: {
            metadata: {
              name: account,
              labels: { 'eventing.knative.dev/oidc': 'enabled' },
              annotations: {
                description: `Service Account for OIDC Authentication for ${sender.kind} "${sender.name}"`,
              },
            },
          },
        })
        .then(
          () => undefined,
          (e: unknown) => {
            if (e instanceof k8s.ApiException && e.code === 409) return;
            this.#accounts.delete(account);
            throw e;
          },
        );
      this.#accounts.set(account, made);
    }
    return made;
  }
}

/**
 * The bearer option of a source's send: a token of the source's identity (sources.knative.dev
 * `kind` named `name`) for the Broker's audience; none when OIDC is off. A token that cannot be
 * had sends none (the Broker then refuses the event, as Knative's would).
 */
export async function sourceBearer(
  oidc: { tokens: OidcTokenSource; name: string; audience: string } | undefined,
  kind: 'ApiServerSource' | 'PingSource',
): Promise<{ bearer?: string }> {
  if (oidc === undefined) return {};
  try {
    return {
      bearer: await oidc.tokens.tokenFor(
        { group: 'sources.knative.dev', kind, name: oidc.name },
        oidc.audience,
      ),
    };
  } catch {
    return {};
  }
}
