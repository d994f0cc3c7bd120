// Knative Serving's own admission checks on manifests: knative-validate (built from the Go module
// knative.dev/serving by test/knative-validate/build.sh; the unit project's global setup runs it)
// decodes each serving.knative.dev/v1 Service strictly and runs its SetDefaults and Validate, as
// Serving's webhooks do on a create in a default install. docs/adr/0066.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, type K8sObject } from './manifests.js';

export const KNATIVE_VALIDATE = path.join(
  REPO_ROOT,
  'test',
  'knative-validate',
  '.cache',
  'bin',
  'knative-validate',
);

/** What the checks say about one Service (or one document that could not be read). */
export interface KnativeFinding {
  source: string;
  document: number;
  namespace: string;
  name: string;
  errors: string[];
  warnings: string[];
}

export interface KnativeReport {
  documents: number;
  services: KnativeFinding[];
  unreadable: KnativeFinding[];
  /** The process's exit status: 0 with no error, 1 with one or more. */
  status: number | null;
}

/** Runs knative-validate on a YAML text (every document of it). */
export function knativeValidateText(text: string): KnativeReport {
  if (!existsSync(KNATIVE_VALIDATE)) {
    throw new Error(
      `${KNATIVE_VALIDATE} is missing: build it with bash test/knative-validate/build.sh ` +
        `(the unit project's global setup does; .ci/run does before npm test)`,
    );
  }
  const r = spawnSync(KNATIVE_VALIDATE, ['--json'], {
    input: text,
    encoding: 'utf8',
    timeout: 60_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  if (r.error) throw new Error(`${KNATIVE_VALIDATE}: ${r.error.message}`);
  if (r.status !== 0 && r.status !== 1) {
    throw new Error(`${KNATIVE_VALIDATE} exited ${r.status}: ${r.stderr.trim()}`);
  }
  const report = JSON.parse(r.stdout) as Omit<KnativeReport, 'status'>;
  return { ...report, status: r.status };
}

/**
 * Runs knative-validate on objects, each a JSON document of one YAML stream: JSON says exactly
 * which values are strings (a plain `off` in YAML would be a boolean to Go's YAML 1.1 reader).
 */
export function knativeValidate(objects: readonly K8sObject[]): KnativeReport {
  return knativeValidateText(objects.map((o) => JSON.stringify(o)).join('\n---\n'));
}

/** Every error of a report, each with the Service it is about (or the document it is in). */
export function knativeErrors(report: KnativeReport): string[] {
  return [
    ...report.unreadable.flatMap((f) => f.errors.map((e) => `document ${f.document}: ${e}`)),
    ...report.services.flatMap((f) => f.errors.map((e) => `${f.namespace}/${f.name}: ${e}`)),
  ];
}
