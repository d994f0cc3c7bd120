// A node script run to completion (tsc, autocannon): its exit code and its output.

import { spawn } from 'node:child_process';

export interface NodeRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export async function runNode(args: readonly string[], cwd?: string): Promise<NodeRun> {
  const child = spawn(process.execPath, args, {
    ...(cwd !== undefined ? { cwd } : {}),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  return { code, stdout, stderr };
}
