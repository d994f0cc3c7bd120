// An HTTP server that counts every request it gets. It stands in for the Kubernetes API server
// (detect's no-op path must send it nothing; it answers 503 so that any call would show up as a
// failure too) and for the Broker's ingress (it answers 202).

import { startHttp } from '../support/http-events.js';

export interface CountingServer {
  readonly url: string;
  /** Requests seen, by "METHOD path". */
  readonly seen: Map<string, number>;
  total(): number;
  close(): Promise<void>;
}

export async function startCountingServer(answerStatus: number): Promise<CountingServer> {
  const seen = new Map<string, number>();
  const started = await startHttp((req, res) => {
    const key = `${req.method ?? '?'} ${(req.url ?? '').split('?')[0] ?? ''}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
    req.resume();
    req.on('end', () => {
      res.statusCode = answerStatus;
      res.setHeader('content-type', 'application/json');
      res.end(answerStatus >= 400 ? '{"kind":"Status","code":503}' : '');
    });
  });
  return {
    // Without the trailing slash: a kubeconfig's server and K_SINK's base.
    url: started.url.replace(/\/$/, ''),
    seen,
    total: () => [...seen.values()].reduce((a, b) => a + b, 0),
    close: () => started.close(),
  };
}

/** A kubeconfig (YAML is a superset of JSON) for a plain-HTTP server with a dummy token. */
export function kubeconfigFor(serverUrl: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'bench', cluster: { server: serverUrl } }],
    users: [{ name: 'bench', user: { token: 'bench-token-not-a-secret' } }],
    contexts: [{ name: 'bench', context: { cluster: 'bench', user: 'bench' } }],
    'current-context': 'bench',
  });
}
