// Makes sure dist/ holds a build of the current sources (npm run build), rebuilding only when a
// source file under functions/ or shared/ is newer than its compiled output.

import { spawn } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { REPO_ROOT } from '../../setup/apiserver-process.js';

async function sourcesOf(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sourcesOf(path)));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

async function mtime(path: string): Promise<number | null> {
  try {
    return (await stat(path)).mtimeMs;
  } catch {
    return null;
  }
}

export async function buildIsStale(): Promise<boolean> {
  const sources = [
    ...(await sourcesOf(join(REPO_ROOT, 'functions'))),
    ...(await sourcesOf(join(REPO_ROOT, 'shared'))),
  ];
  for (const source of sources) {
    const out = join(REPO_ROOT, 'dist', relative(REPO_ROOT, source)).replace(/\.ts$/, '.js');
    const built = await mtime(out);
    const edited = await mtime(source);
    if (built === null || edited === null || edited > built) return true;
  }
  return false;
}

/** Runs `npm run build` when dist/ is missing or older than a source. */
export async function ensureBuilt(): Promise<void> {
  if (!(await buildIsStale())) return;
  const child = spawn('npm', ['run', 'build'], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
  const code = await new Promise<number | null>((done, fail) => {
    child.once('error', fail);
    child.once('exit', (c) => done(c));
  });
  if (code !== 0) throw new Error(`npm run build exited ${code}:\n${output.slice(-4000)}`);
}

export const DIST = join(REPO_ROOT, 'dist');
