// A function (or any server script) as a child process, `node SCRIPT` with PORT set: its pid,
// URL, RSS and CPU time from /proc, its JSON log lines and raw output, a wait for a log message,
// its exit, and the time from spawn to the first CloudEvent it answers.

import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import { builtMain } from './build.js';
import { RECOVERY_NAMESPACE } from '../../support/manifests.js';

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

export interface LogLine {
  readonly level?: string;
  readonly msg?: string;
  readonly [key: string]: unknown;
}

export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface ChildFunction {
  readonly pid: number;
  readonly port: number;
  readonly url: string;
  /** performance.now() just before spawn. */
  readonly spawnedAt: number;
  /** The JSON lines it wrote to stdout so far. */
  readonly lines: LogLine[];
  /** The last few KB of its raw stdout and stderr. */
  outputTail(): string;
  waitForLog(msg: string, timeoutMs?: number): Promise<LogLine>;
  readonly exited: Promise<ChildExit>;
  kill(signal: NodeJS.Signals): void;
  /** SIGTERM, SIGKILL after 5 s; resolves on exit. */
  stop(): Promise<void>;
  /** Resident set size in KiB, from /proc. */
  rssKb(): Promise<number>;
  /** CPU time used so far (user + system), ms, from /proc (10 ms resolution). */
  cpuMs(): Promise<number>;
}

const running = new Set<ChildProcessByStdio<null, Readable, Readable>>();

/** Kills every child this module started (called on exit and on errors). */
export function killAllServers(): void {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
}

/**
 * `node script` with PORT=`port` (default: a free one), only PATH of this environment, and
 * POD_NAMESPACE the default install namespace unless `env` gives one.
 */
export async function spawnServer(
  script: string,
  env: Record<string, string>,
  port?: number,
): Promise<ChildFunction> {
  const p = port ?? (await freePort());
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [script], {
    // A function learns its install namespace from its pod (docs/adr/0063); a child runs in none.
    env: {
      PATH: process.env['PATH'] ?? '',
      POD_NAMESPACE: RECOVERY_NAMESPACE,
      ...env,
      PORT: String(p),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  if (child.pid === undefined) throw new Error(`could not spawn node ${script}`);
  const pid = child.pid;
  const lines: LogLine[] = [];
  let raw = '';
  let pending = '';
  const waiters: { msg: string; resolve: (l: LogLine) => void }[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    raw += text;
    pending += text;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const one = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      let line: LogLine;
      try {
        line = JSON.parse(one) as LogLine;
      } catch {
        continue;
      }
      lines.push(line);
      for (const w of waiters.splice(0)) {
        if (line.msg === w.msg) w.resolve(line);
        else waiters.push(w);
      }
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
  const exited = new Promise<ChildExit>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  return {
    pid,
    port: p,
    url: `http://127.0.0.1:${p}/`,
    spawnedAt,
    lines,
    outputTail: () => raw.slice(-TAIL_CHARS),
    waitForLog(msg, timeoutMs = 20_000) {
      const seen = lines.find((l) => l.msg === msg);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise<LogLine>((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `${script}: no "${msg}" log line within ${timeoutMs} ms:\n${raw.slice(-2000)}`,
              ),
            ),
          timeoutMs,
        );
        waiters.push({
          msg,
          resolve: (l) => {
            clearTimeout(timer);
            resolve(l);
          },
        });
        void exited.then(() => {
          clearTimeout(timer);
          reject(new Error(`${script} exited before logging "${msg}":\n${raw.slice(-2000)}`));
        });
      });
    },
    exited,
    kill: (signal) => {
      child.kill(signal);
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
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
  };
}

/** The built function `name` (dist/functions/NAME/main.js), once it logged "listening". */
export async function spawnFunction(
  name: string,
  env: Record<string, string>,
): Promise<ChildFunction> {
  // In a pod the namespace comes from the ServiceAccount namespace file; here it is given.
  const child = await spawnServer(builtMain(name), env);
  await child.waitForLog('listening');
  return child;
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
  server: ChildFunction,
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

/**
 * Spawns `node script`, waits for its 200 to the first event (`headers`, `body`), runs `then` with
 * it and the milliseconds from spawn to that answer, and stops it.
 */
export async function withFirstAnswer<T>(
  script: string,
  env: Record<string, string>,
  headers: Record<string, string>,
  body: string,
  then: (server: ChildFunction, ms: number) => Promise<T>,
): Promise<T> {
  const server = await spawnServer(script, env);
  try {
    const { ms, answer } = await timeToFirstAnswer(server, headers, body);
    if (answer.status !== 200) {
      throw new Error(`first event answered ${answer.status}: ${answer.body}`);
    }
    return await then(server, ms);
  } finally {
    await server.stop();
  }
}
