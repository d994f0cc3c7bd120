// A keep-alive HTTP client that posts exactly the headers and bytes it is given (fetch would
// normalise or refuse some of them). One agent per client, so thousands of cases reuse sockets.

import http from 'node:http';

export interface RawAnswer {
  readonly status: number;
  readonly body: string;
  /** Lower-case names of the response headers. */
  readonly headerNames: readonly string[];
}

export interface RawClient {
  post(headers: Readonly<Record<string, string>>, body: Buffer): Promise<RawAnswer>;
  close(): void;
}

export function createRawClient(baseUrl: string, opts: { timeoutMs?: number } = {}): RawClient {
  const url = new URL(baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const timeoutMs = opts.timeoutMs ?? 30_000;
  return {
    post(headers, body) {
      return new Promise<RawAnswer>((resolve, reject) => {
        let status: number | undefined;
        let headerNames: string[] = [];
        const chunks: Buffer[] = [];
        let settled = false;
        const settle = (fn: () => void): void => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          fn();
        };
        const req = http.request({
          method: 'POST',
          hostname: url.hostname,
          port: url.port,
          path: url.pathname,
          agent,
          headers: { ...headers, 'content-length': String(body.length) },
        });
        const timer = setTimeout(() => {
          settle(() => reject(new Error(`no answer within ${timeoutMs} ms`)));
          req.destroy();
        }, timeoutMs);
        req.on('response', (res) => {
          status = res.statusCode ?? 0;
          headerNames = Object.keys(res.headers);
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            settle(() =>
              resolve({
                status: status ?? 0,
                body: Buffer.concat(chunks).toString('utf8'),
                headerNames,
              }),
            ),
          );
          res.on('error', (err) =>
            settle(() =>
              status !== undefined ? resolve({ status, body: '', headerNames }) : reject(err),
            ),
          );
        });
        // A server that answers (413) before reading a large body may close the socket while the
        // body is still being written: the answer counts, the write error does not.
        req.on('error', (err) =>
          settle(() =>
            status !== undefined ? resolve({ status, body: '', headerNames }) : reject(err),
          ),
        );
        req.end(body);
      });
    },
    close() {
      agent.destroy();
    },
  };
}
