// Child processes the benchmarks measure: a server started with `node FILE`, its port, its RSS,
// and the time from spawn to the first CloudEvent it answers.

import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

const TAIL_CHARS = 4000;
/** USER_HZ: Linux reports process CPU times in 1/100 s on every common architecture. */
const CLOCK_TICKS_PER_SECOND = 100;

/** A port that was free a moment ago (the functions refuse PORT=0). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface ServerProcess {
  readonly pid: number;
  readonly port: number;
  readonly url: string;
  /** performance.now() just before spawn. */
  readonly spawnedAt: number;
  /** Resident set size in KiB, from /proc. */
  rssKb(): Promise<number>;
  /** CPU time used so far (user + system), ms, from /proc (10 ms resolution). */
  cpuMs(): Promise<number>;
  /** What the process wrote to stdout and stderr (the last few KB). */
  outputTail(): string;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();

/** Kills every server this module started (called on exit and on errors). */
export function killAllServers(): void {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
}

export async function spawnServer(
  script: string,
  env: Record<string, string>,
  port?: number,
): Promise<ServerProcess> {
  const p = port ?? (await freePort());
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [script], {
    env: { PATH: process.env['PATH'] ?? '', ...env, PORT: String(p) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let tail = '';
  const keep = (c: Buffer): void => {
    tail = (tail + c.toString('utf8')).slice(-TAIL_CHARS);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      running.delete(child);
      resolve();
    });
  });
  if (child.pid === undefined) throw new Error(`could not spawn node ${script}`);
  const pid = child.pid;
  return {
    pid,
    port: p,
    url: `http://127.0.0.1:${p}/`,
    spawnedAt,
    async rssKb() {
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
      if (m?.[1] === undefined) throw new Error(`no VmRSS for pid ${pid}`);
      return Number(m[1]);
    },
    async cpuMs() {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      // Fields after the command name (which may contain spaces) start at ") ".
      const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      const ticks = Number(fields[11]) + Number(fields[12]);
      if (!Number.isFinite(ticks)) throw new Error(`no CPU times for pid ${pid}`);
      return ticks * (1000 / CLOCK_TICKS_PER_SECOND);
    },
    outputTail: () => tail,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export interface Answer {
  readonly status: number;
  readonly body: string;
}

/** One POST on a fresh connection. Rejects on transport errors (e.g. ECONNREFUSED). */
export function postOnce(
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Posts the event until the server answers it (connection refused means "not listening yet") and
 * returns the milliseconds from spawn to the answer, plus the answer.
 */
export async function timeToFirstAnswer(
  server: ServerProcess,
  headers: Record<string, string>,
  body: string,
  timeoutMs = 30_000,
): Promise<{ ms: number; answer: Answer }> {
  const deadline = server.spawnedAt + timeoutMs;
  for (;;) {
    try {
      const answer = await postOnce(server.url, headers, body);
      return { ms: performance.now() - server.spawnedAt, answer };
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      if (code !== 'ECONNREFUSED' && code !== 'ECONNRESET') throw e;
      if (performance.now() > deadline) {
        throw new Error(`no answer within ${timeoutMs} ms; output:\n${server.outputTail()}`, {
          cause: e,
        });
      }
      await new Promise((r) => setTimeout(r, 2));
    }
  }
}
