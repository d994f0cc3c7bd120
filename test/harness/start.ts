// `npm start`: the whole system on this machine.
//
//   npm start                         a simulated cluster: a real test API server, the source-watcher
//                                     simulator losing the Ready write of a few dozen AGs (one of
//                                     them for good), the functions and the Knative emulation, on a
//                                     fast-forwarded clock. Prints progress and a summary, then exits.
//   npm start -- --kubeconfig PATH    the functions and the Knative emulation against a real cluster
//                                     (its own source-watcher; no simulator), on the real clock,
//                                     until interrupted, every client on exactly that kubeconfig
//                                     (start-cluster.ts); [--wait-seconds N] bounds the wait for
//                                     its API server (default 180).
//
// Configuration comes from the RECOVERY_* variables (see README).

import { parseArgs } from 'node:util';
import { DEFAULT_WAIT_SECONDS } from './api-server-wait.js';
import { runAgainstCluster } from './start-cluster.js';

function recoveryEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith('RECOVERY_') && value !== undefined) env[key] = value;
  }
  return env;
}

const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

const USAGE = `usage: npm start [-- --kubeconfig PATH [--wait-seconds N]]
  --kubeconfig PATH   run against that cluster, with exactly that kubeconfig's credentials
  --wait-seconds N    how long to wait for its API server to answer (default ${DEFAULT_WAIT_SECONDS})`;

function fail(message: string): never {
  process.stderr.write(`npm start: ${message}\n`);
  process.exit(1);
}

function parseCli(): { help: boolean; kubeconfig?: string; waitSeconds?: number } {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        kubeconfig: { type: 'string' },
        'wait-seconds': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (err) {
    fail(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
  }
  const rawWait = values['wait-seconds'];
  let waitSeconds: number | undefined;
  if (rawWait !== undefined) {
    waitSeconds = /^[0-9]{1,6}$/.test(rawWait) ? Number(rawWait) : NaN;
    if (!Number.isFinite(waitSeconds)) {
      fail(`--wait-seconds=${JSON.stringify(rawWait)}: expected a whole number of seconds`);
    }
    if (values.kubeconfig === undefined) fail('--wait-seconds needs --kubeconfig');
  }
  return {
    help: values.help === true,
    ...(values.kubeconfig !== undefined ? { kubeconfig: values.kubeconfig } : {}),
    ...(waitSeconds !== undefined ? { waitSeconds } : {}),
  };
}

const cli = parseCli();
if (cli.help) {
  say(USAGE);
} else if (cli.kubeconfig !== undefined) {
  try {
    await runAgainstCluster(cli.kubeconfig, recoveryEnv(), say, {
      ...(cli.waitSeconds !== undefined ? { waitSeconds: cli.waitSeconds } : {}),
    });
  } catch (err) {
    fail(err instanceof Error ? err.message : String(err));
  }
  // Idle keep-alive sockets and the like must not hold the process once everything stopped.
  process.exit(0);
} else {
  // Loaded only here: the simulated mode's fixtures come from the test support, which loads
  // vitest; the --kubeconfig mode must not.
  const { runSimulated } = await import('./start-simulated.js');
  await runSimulated(recoveryEnv(), say);
  process.exit(0);
}
