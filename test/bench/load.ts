// Load from a SEPARATE process: autocannon's CLI in a child process, so the load generator never
// shares an event loop with the server under test.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runNode } from '../harness/functions.js';

export interface LoadOptions {
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly connections: number;
  /** Fixed duration in seconds, or… */
  readonly durationSec?: number;
  /** …a fixed number of requests. */
  readonly amount?: number;
}

export interface LoadResult {
  /** 2xx answers per second over the whole run. */
  readonly rate: number;
  readonly ok: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly durationSec: number;
  readonly latencyP50Ms: number;
  readonly latencyP99Ms: number;
}

interface AutocannonJson {
  duration?: number;
  '2xx'?: number;
  non2xx?: number;
  errors?: number;
  timeouts?: number;
  latency?: { p50?: number; p99?: number };
}

export async function runLoad(root: string, opts: LoadOptions): Promise<LoadResult> {
  const dir = await mkdtemp(join(tmpdir(), 'swr-bench-load-'));
  try {
    const bodyFile = join(dir, 'body.json');
    await writeFile(bodyFile, opts.body);
    const args = [
      join(root, 'node_modules', 'autocannon', 'autocannon.js'),
      '--json',
      '--no-progress',
      '--connections',
      String(opts.connections),
      '--method',
      'POST',
      '--input',
      bodyFile,
    ];
    if (opts.amount !== undefined) args.push('--amount', String(opts.amount));
    else args.push('--duration', String(opts.durationSec ?? 10));
    for (const [k, v] of Object.entries(opts.headers)) {
      if (k.toLowerCase() === 'content-length') continue;
      args.push('--headers', `${k}=${v}`);
    }
    args.push(opts.url);
    const { code, stdout: out, stderr: err } = await runNode(args);
    if (code !== 0) throw new Error(`autocannon exited ${code}: ${err.slice(-2000)}`);
    const json = JSON.parse(out.slice(out.indexOf('{'))) as AutocannonJson;
    const durationSec = json.duration ?? 0;
    const ok = json['2xx'] ?? 0;
    return {
      rate: durationSec > 0 ? ok / durationSec : 0,
      ok,
      non2xx: json.non2xx ?? 0,
      errors: json.errors ?? 0,
      timeouts: json.timeouts ?? 0,
      durationSec,
      latencyP50Ms: json.latency?.p50 ?? 0,
      latencyP99Ms: json.latency?.p99 ?? 0,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
