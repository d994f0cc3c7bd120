// Heap measurement after a full garbage collection. The flag is switched on at run time, so the
// test runner needs no --expose-gc option.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** heapUsed in bytes after two full collections. */
export function heapUsedAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

export const MiB = 1024 * 1024;
