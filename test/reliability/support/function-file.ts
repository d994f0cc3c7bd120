// The start of a reliability file that runs one function through the recording proxy: its time
// zero, a namespace of its own, the admin KubeConfig and its function suite, in a cluster emptied
// first of the objects the function's sweeps would see.

import { beforeAll } from 'vitest';
import type { KubeConfig } from '@kubernetes/client-node';
import { testKubeConfig, uniqueName } from '../../support/apiserver.js';
import { deleteAllArtifactGenerators } from '../../support/ag-states.js';
import { functionSuite, type FunctionSuite } from '../../support/function-suite.js';
import { deleteAllPackageSources } from './cluster.js';

export interface FunctionFile {
  /** The file's time zero: now, in whole seconds. */
  readonly T0: number;
  /** A namespace no other file uses. */
  readonly NS: string;
  readonly kc: KubeConfig;
  readonly suite: FunctionSuite;
}

/** What the cluster is emptied of before the file's function suite starts. */
export type EmptiedOf = 'nothing' | 'ags' | 'ags-and-packagesources';

export function functionFile(tag: string, nsPrefix: string, empty: EmptiedOf): FunctionFile {
  const kc = testKubeConfig();
  if (empty !== 'nothing') {
    beforeAll(async () => {
      await deleteAllArtifactGenerators(kc);
      if (empty === 'ags-and-packagesources') await deleteAllPackageSources(kc);
    });
  }
  return {
    T0: Math.floor(Date.now() / 1000) * 1000,
    NS: uniqueName(nsPrefix),
    kc,
    suite: functionSuite(tag, kc),
  };
}
