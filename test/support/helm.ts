// The real Helm of the chart tests (built from helm.sh/helm/v3 by test/helm/build.sh; the unit
// project's global setup runs it): `helm template` of a chart with a values object, parsed.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseManifests, REPO_ROOT, type K8sObject } from './manifests.js';

export const HELM = path.join(REPO_ROOT, 'test', 'helm', '.cache', 'bin', 'helm');

export interface HelmResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs helm with the arguments; `values`, when given, goes in as a values file. */
export function runHelm(args: readonly string[], values?: unknown): HelmResult {
  const dir = mkdtempSync(path.join(tmpdir(), 'swr-helm-'));
  try {
    const extra: string[] = [];
    if (values !== undefined) {
      writeFileSync(path.join(dir, 'values.json'), JSON.stringify(values));
      extra.push('--values', path.join(dir, 'values.json'));
    }
    const r = spawnSync(HELM, [...args, ...extra], {
      encoding: 'utf8',
      timeout: 60_000,
      maxBuffer: 16 * 1024 * 1024,
      env: { ...process.env, HELM_CACHE_HOME: dir, HELM_CONFIG_HOME: dir, HELM_DATA_HOME: dir },
    });
    if (r.error) throw new Error(`${HELM}: ${r.error.message} (test/helm/build.sh builds it)`);
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `helm template swr <chart>` with the values, parsed; throws with helm's message on failure. */
export function helmTemplate(chart: string, values: unknown = {}): K8sObject[] {
  const r = runHelm(['template', 'swr', chart], values);
  if (r.status !== 0) throw new Error(`helm template ${chart} failed: ${r.stderr.trim()}`);
  return parseManifests(r.stdout, `helm template ${path.relative(REPO_ROOT, chart)}`);
}
