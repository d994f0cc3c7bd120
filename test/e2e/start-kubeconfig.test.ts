// `npm start -- --kubeconfig PATH` (harness/start.ts, start-cluster.ts) as users run it: the real
// CLI as a child process against the test cluster, every client on exactly the kubeconfig given.
// In this process, the source-watcher simulator on the real clock loses one AG's Ready write
// once; the CLI's functions must force it and see it recover. Once with the admin's kubeconfig
// (client certificate), once through the credential-less kubeconfig of a credential-adding proxy
// (support/kube-proxy.ts, as `kubectl proxy`), once started before that proxy listens (it waits,
// then goes on); and a kubeconfig whose credentials the API server rejects is a clear error.
//
// The CLI runs the functions cluster-wide (detect's sweep lists every AG): the e2e project runs
// its files one at a time (vitest.config.ts), each case starts from a clean world (the kit's
// resetWorld) and asserts only on its own AG, in a namespace of its own.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createSourceWatcherSim,
  type SourceWatcherSim,
} from '../harness/source-watcher-sim/index.js';
import { WallClock } from '../harness/wall-clock.js';
import { freePort } from '../harness/functions.js';
import {
  createArtifactGenerator,
  ensureNamespace,
  makeArtifactGenerator,
  testKubeconfigPath,
  uniqueName,
} from '../support/apiserver.js';
import { startKubeProxy, writeProxyKubeconfig, type KubeProxy } from '../support/kube-proxy.js';
import {
  ATTEMPTS,
  kc,
  LAST_RECOVERY_AT,
  readAg,
  readyCondition,
  REQUESTED_AT,
  resetWorld,
  type AgObject,
} from './scenario-kit.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const READY_LINE = /^Broker ingress: /m;
const WAITING_LINE = /^waiting for the API server at (\S+): .+; retrying in [0-9.]+s$/m;
/** Start-up of the CLI (tsx compiling the harness) on a busy machine, and one recovery. */
const CLI_READY_MS = 60_000;
const RECOVERED_MS = 60_000;
const EXIT_MS = 20_000;

// A lost write is forced at once (early detection); a retry, if one is needed, comes soon.
const CLI_ENV = {
  RECOVERY_GRACE_PERIOD: '5s',
  RECOVERY_BACKOFF_INITIAL: '2s',
  RECOVERY_BACKOFF_MAX: '4s',
  LOG_LEVEL: 'info',
};

/**
 * Fails the CLI at the first import of vitest: `npm start -- --kubeconfig` must not load it.
 * (Through NODE_OPTIONS, so the outer Node of toolchain/with-node.cjs runs it too: it has no
 * registerHooks on an older major, and loads no vitest.)
 */
const NO_VITEST_HOOK = `data:text/javascript,${encodeURIComponent(
  `import * as m from 'node:module';
   m.registerHooks?.({ resolve(s, c, next) {
     if (s === 'vitest' || s.startsWith('vitest/')) throw new Error('npm start -- --kubeconfig loaded vitest from ' + c.parentURL);
     return next(s, c);
   } });`,
)}`;

interface Cli {
  readonly child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  waitFor(line: RegExp, timeoutMs: number): Promise<RegExpExecArray>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Ctrl-C: SIGINT to its process group, as a terminal sends it. */
  interrupt(): void;
}

const clis: Cli[] = [];

/**
 * `npm start`'s own command (package.json), without npm in between: node toolchain/with-node.cjs
 * node --import tsx test/harness/start.ts. (Not the tsx CLI: its signal relay SIGKILLs a child that
 * does not confirm a Ctrl-C within 30 ms, which a busy machine cannot promise.)
 */
async function npmStartCommand(): Promise<string[]> {
  const pkg = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const command = (pkg.scripts['start'] ?? '').split(' ');
  expect(command.slice(0, 2)).toEqual(['node', 'toolchain/with-node.cjs']);
  return command.slice(1);
}

async function startCli(kubeconfig: string, extraArgs: string[] = []): Promise<Cli> {
  const child = spawn(
    process.execPath,
    [...(await npmStartCommand()), '--kubeconfig', kubeconfig, ...extraArgs],
    {
      cwd: REPO,
      // Its own process group, so that SIGINT reaches with-node and the CLI at once, as a
      // terminal's Ctrl-C does.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        ...CLI_ENV,
        NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} --import=${NO_VITEST_HOOK}`.trim(),
      },
    },
  );
  let text = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer): void => {
    text += chunk.toString('utf8');
    for (const l of [...listeners]) l();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => {
    child.once('exit', (code, signal) => {
      for (const l of [...listeners]) l();
      done({ code, signal });
    });
  });
  const cli: Cli = {
    child,
    output: () => text,
    exited,
    waitFor(line, timeoutMs) {
      return new Promise((done, fail) => {
        const check = (): void => {
          const found = line.exec(text);
          if (found !== null) {
            finish();
            done(found);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            finish();
            fail(new Error(`the CLI exited before printing ${line}:\n${tail(text)}`));
          }
        };
        const timer = setTimeout(() => {
          finish();
          fail(new Error(`no ${line} from the CLI within ${timeoutMs} ms:\n${tail(text)}`));
        }, timeoutMs);
        const finish = (): void => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
    interrupt() {
      if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, 'SIGINT');
    },
  };
  clis.push(cli);
  return cli;
}

const tail = (text: string): string => text.slice(-4000);

/** Ctrl-C, then the CLI must exit by itself, with 0, having said it stopped. */
async function interruptAndExpectCleanExit(cli: Cli): Promise<void> {
  cli.interrupt();
  const exit = await Promise.race([
    cli.exited,
    new Promise<'hung'>((r) => setTimeout(() => r('hung'), EXIT_MS)),
  ]);
  expect(exit, tail(cli.output())).toEqual({ code: 0, signal: null });
  expect(cli.output()).toMatch(/^stopped$/m);
}

let dir: string;
let sim: SourceWatcherSim | undefined;
let simClock: WallClock | undefined;
let proxy: KubeProxy | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'start-kubeconfig-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  await resetWorld();
});

afterEach(async () => {
  for (const cli of clis.splice(0)) {
    if (
      cli.child.pid !== undefined &&
      cli.child.exitCode === null &&
      cli.child.signalCode === null
    ) {
      process.kill(-cli.child.pid, 'SIGKILL');
    }
  }
  await sim?.stop();
  simClock?.stop();
  sim = undefined;
  simClock = undefined;
  await proxy?.stop();
  proxy = undefined;
  // The CLI's functions leave tracking and the alarm behind: the next file starts clean anyway.
  await resetWorld();
});

/**
 * The simulator on the real clock, in a namespace of its own, losing the Ready write of one AG
 * once; then that AG, created once the CLI is ready (its ApiServerSource watches).
 */
async function stuckOnceAg(): Promise<{ namespace: string; name: string }> {
  const namespace = uniqueName('start-kc');
  const name = uniqueName('ag');
  await ensureNamespace(namespace);
  simClock = new WallClock();
  sim = createSourceWatcherSim({ kubeConfig: kc, clock: simClock, namespace, buildTimeMs: 500 });
  sim.loseConditionsWrite(`${namespace}/${name}`, { times: 1 });
  await sim.start();
  return { namespace, name };
}

/** Waits until the AG was forced and recovered; returns it. */
async function recovered(ref: { namespace: string; name: string }): Promise<AgObject> {
  const deadline = Date.now() + RECOVERED_MS;
  let ag: AgObject | undefined;
  for (;;) {
    ag = await readAg(ref);
    const ready = readyCondition(ag);
    const annotations = ag?.metadata?.annotations ?? {};
    if (
      ready?.status === 'True' &&
      ready.observedGeneration === ag?.metadata?.generation &&
      annotations[REQUESTED_AT] !== undefined &&
      annotations[ATTEMPTS] === undefined &&
      annotations[LAST_RECOVERY_AT] === undefined
    ) {
      return ag as AgObject;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `${ref.namespace}/${ref.name} not recovered within ${RECOVERED_MS} ms: ${JSON.stringify({ annotations, conditions: ag?.status?.conditions })}`,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The recovery the CLI's functions must bring about, on the AG in the API server. */
async function expectRecoveryThroughCli(cli: Cli): Promise<void> {
  await cli.waitFor(READY_LINE, CLI_READY_MS);
  const ref = await stuckOnceAg();
  await createArtifactGenerator(makeArtifactGenerator(ref), kc);
  const ag = await recovered(ref);
  // The one lost write happened, and only a force (requestedAt, which source-watcher never
  // writes) made source-watcher build again: the tracking is gone because Ready came back.
  expect(sim?.stats.lostWrites).toBe(1);
  expect(Date.parse(ag.metadata?.annotations?.[REQUESTED_AT] ?? '')).not.toBeNaN();
  expect(readyCondition(ag)?.status).toBe('True');
  await interruptAndExpectCleanExit(cli);
}

describe('npm start -- --kubeconfig PATH uses exactly the kubeconfig given', () => {
  it('the admin kubeconfig file (client certificate): a lost Ready write is forced and recovers; Ctrl-C stops it cleanly', async () => {
    const cli = await startCli(testKubeconfigPath());
    await expectRecoveryThroughCli(cli);
    expect(cli.output()).toMatch(/credentials as given/);
  });

  it('a credential-less kubeconfig through a credential-adding proxy (as kubectl proxy): the same recovery', async () => {
    proxy = await startKubeProxy(kc, { tag: 'npm-start' });
    const file = join(dir, 'proxy.kubeconfig');
    await proxy.writeKubeconfig(file);
    const cli = await startCli(file);
    await expectRecoveryThroughCli(cli);
    // The CLI's calls went through the proxy, watches and the force's patch included, none
    // rejected for its (absent) credentials.
    expect(proxy.count({ clientTag: 'npm-start', verb: 'watch' })).toBeGreaterThan(0);
    expect(proxy.count({ clientTag: 'npm-start', verb: 'patch' })).toBeGreaterThan(0);
    expect(proxy.calls.filter((c) => c.status === 401 || c.status === 403)).toEqual([]);
  });

  it('started before the proxy listens: prints the waiting line, then goes on once it does', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const file = join(dir, 'early.kubeconfig');
    await writeProxyKubeconfig(file, url);
    const cli = await startCli(file);
    const waiting = await cli.waitFor(WAITING_LINE, CLI_READY_MS);
    expect(waiting[1]).toBe(url);
    expect(cli.output()).toMatch(/ECONNREFUSED/);
    proxy = await startKubeProxy(kc, { port });
    await cli.waitFor(READY_LINE, CLI_READY_MS);
    expect(proxy.count({ resource: 'artifactgenerators', verb: 'list' })).toBeGreaterThan(0);
    await interruptAndExpectCleanExit(cli);
  });

  it('credentials the API server rejects: a clear error naming the kubeconfig user, no retry loop', async () => {
    const server = kc.getCurrentCluster()?.server ?? '';
    const file = join(dir, 'bad-token.kubeconfig');
    const bad = kc.exportConfig();
    // The admin's cluster (its CA) with a token no one issued, under a user name of our own.
    const parsed = JSON.parse(bad) as {
      users: { name: string; user: Record<string, unknown> }[];
      contexts: { context: { user: string } }[];
    };
    parsed.users = [{ name: 'nobody', user: { token: 'not-a-token' } }];
    for (const c of parsed.contexts) c.context.user = 'nobody';
    await writeFile(file, JSON.stringify(parsed), { mode: 0o600 });
    const cli = await startCli(file);
    const exit = await Promise.race([
      cli.exited,
      new Promise<'hung'>((r) => setTimeout(() => r('hung'), CLI_READY_MS)),
    ]);
    expect(exit, tail(cli.output())).toEqual({ code: 1, signal: null });
    expect(cli.output()).toContain(
      `npm start: the API server at ${server} does not accept the credentials of kubeconfig user "nobody" (401 Unauthorized`,
    );
    expect(cli.output()).not.toMatch(WAITING_LINE);
  });
});
