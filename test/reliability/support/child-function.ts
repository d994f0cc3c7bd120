// A built function (node dist/functions/<name>/main.js) as a child process: its JSON log lines,
// a wait for a given message, its exit.

import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { DIST } from './build.js';

export interface LogLine {
  readonly level?: string;
  readonly msg?: string;
  readonly [key: string]: unknown;
}

export interface ChildFunction {
  readonly url: string;
  readonly pid: number;
  readonly lines: LogLine[];
  /** Raw stdout and stderr text. */
  output(): string;
  waitForLog(msg: string, timeoutMs?: number): Promise<LogLine>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal: NodeJS.Signals): void;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export async function spawnFunction(
  name: string,
  env: Record<string, string>,
): Promise<ChildFunction> {
  const port = await freePort();
  const child: ChildProcessByStdio<null, Readable, Readable> = spawn(
    process.execPath,
    [join(DIST, 'functions', name, 'main.js')],
    {
      env: { PATH: process.env['PATH'] ?? '', PORT: String(port), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
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
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const handle: ChildFunction = {
    url: `http://127.0.0.1:${port}/`,
    pid: child.pid ?? -1,
    lines,
    output: () => raw,
    waitForLog(msg, timeoutMs = 20_000) {
      const seen = lines.find((l) => l.msg === msg);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise<LogLine>((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `${name}: no "${msg}" log line within ${timeoutMs} ms:\n${raw.slice(-2000)}`,
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
          reject(new Error(`${name} exited before logging "${msg}":\n${raw.slice(-2000)}`));
        });
      });
    },
    exited,
    kill: (signal) => {
      child.kill(signal);
    },
  };
  await handle.waitForLog('listening');
  return handle;
}
