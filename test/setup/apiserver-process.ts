// Starts and stops the test cluster binary (test/apiserver: embedded etcd, kube-apiserver and
// kube-controller-manager; docs/adr/0030-real-kube-apiserver.md). The binary writes a kubeconfig
// and prints "READY <url>" once the cluster is ready; it exits on SIGTERM or when its stdin
// closes (so it dies with this process), and takes its components with it.

import { spawn } from 'node:child_process';
import type { ChildProcessByStdio } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const APISERVER_DIR = join(REPO_ROOT, 'test', 'apiserver');
export const APISERVER_BINARY = join(APISERVER_DIR, '.cache', 'bin', 'testapiserver');
export const APISERVER_BUILD_SCRIPT = join(APISERVER_DIR, 'build.sh');

const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 25_000;
const STDERR_TAIL_CHARS = 8_000;

export interface RunningApiServer {
  /** https://127.0.0.1:PORT */
  readonly url: string;
  /** Kubeconfig for a system:masters client (CA, client certificate and key inline). */
  readonly kubeconfigPath: string;
  /** The last few kilobytes the server wrote to stderr. */
  stderrTail(): string;
  /** SIGTERM, wait for exit (SIGKILL after a timeout), remove the work directory. */
  stop(): Promise<void>;
}

type ServerChild = ChildProcessByStdio<Writable, Readable, Readable>;

/** Runs test/apiserver/build.sh (a no-op when the binary is newer than its sources). */
export async function buildApiServer(): Promise<void> {
  const child = spawn('bash', [APISERVER_BUILD_SCRIPT], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const code = await new Promise<number | null>((done, fail) => {
    child.once('error', fail);
    child.once('exit', (exitCode) => done(exitCode));
  });
  if (code !== 0) {
    throw new Error(`test API server build failed: bash ${APISERVER_BUILD_SCRIPT} exited ${code}`);
  }
}

export async function startApiServer(binary = APISERVER_BINARY): Promise<RunningApiServer> {
  const workDir = await mkdtemp(join(tmpdir(), 'swr-test-apiserver-'));
  const kubeconfigPath = join(workDir, 'kubeconfig');
  const child: ServerChild = spawn(
    binary,
    ['--kubeconfig-out', kubeconfigPath, '--data-dir', workDir, '--exit-on-stdin-eof'],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_TAIL_CHARS);
  });
  const exited = new Promise<string>((done) => {
    child.once('exit', (code, signal) => done(`exited with code ${code} signal ${signal}`));
    child.once('error', (err) => done(`failed to spawn ${binary}: ${err.message}`));
  });

  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(killer);
    }
    child.stdin.destroy();
    await rm(workDir, { recursive: true, force: true });
  };

  try {
    const url = await waitForReady(child, exited);
    return { url, kubeconfigPath, stderrTail: () => stderr, stop };
  } catch (err) {
    await stop();
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(
      `test API server did not start: ${reason}\n--- server stderr (tail) ---\n${stderr}`,
      { cause: err },
    );
  }
}

function waitForReady(child: ServerChild, exited: Promise<string>): Promise<string> {
  return new Promise<string>((done, fail) => {
    let stdout = '';
    const timer = setTimeout(
      () => fail(new Error(`no READY line within ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
      const match = /^READY (\S+)$/m.exec(stdout);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        done(match[1]);
      }
    });
    void exited.then((how) => {
      clearTimeout(timer);
      fail(new Error(how));
    });
  });
}
