// `npm run test:rbac-rules`: removing any single RBAC rule from knative/ makes at least one test
// fail. For each rule of each Role and ClusterRole of the rendered package (`kubectl kustomize
// knative/`), it runs a fixed set of suites against a fresh test cluster whose RBAC is installed
// without that one rule (SWR_RBAC_DROP_RULE, test/setup/cluster-rbac.ts: removed after rendering,
// so kustomize's replacements stay intact), and records which tests fail. A
// baseline run with nothing removed must pass first. Prints a Markdown table; exits 1 when any
// removal leaves every test green (a rule no test needs) or the baseline fails.
//
//   npm run test:rbac-rules                 every rule
//   npm run test:rbac-rules -- --only detect  rules whose role name contains "detect"

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DROP_RULE_ENV } from '../setup/cluster-rbac.js';
import { KNATIVE_DIR, REPO_ROOT, renderKustomize } from '../support/manifests.js';

/** The suites each run executes: every function under its own ServiceAccount, and the e2e flow. */
export const SUITES = [
  'test/integration/functions/',
  'test/integration/control-plane.test.ts',
  'test/e2e/rbac-from-behaviour.test.ts',
];

interface RuleRef {
  kind: string;
  name: string;
  namespace: string | undefined;
  index: number;
  text: string;
}

interface RunResult {
  passed: number;
  failed: string[];
  seconds: number;
  error?: string;
}

function describeRule(rule: Record<string, unknown>): string {
  const list = (k: string): string =>
    Array.isArray(rule[k]) ? (rule[k] as string[]).join(',') : '';
  const names = list('resourceNames');
  return `${list('verbs')} ${list('resources')}${names ? ` (names: ${names})` : ''}`;
}

/**
 * Every rule of every Role and ClusterRole of the package as rendered (`kubectl kustomize`): the
 * rules the test cluster installs. Removing a rule from the rendered objects, not from the source
 * files, keeps kustomize's replacements (knative/components/names) intact.
 */
export function findRules(root: string = KNATIVE_DIR): RuleRef[] {
  const rules: RuleRef[] = [];
  for (const o of renderKustomize(root)) {
    if (o.kind !== 'Role' && o.kind !== 'ClusterRole') continue;
    const list = (o as unknown as { rules?: Record<string, unknown>[] }).rules ?? [];
    list.forEach((rule, index) =>
      rules.push({
        kind: o.kind,
        name: o.metadata.name,
        namespace: o.metadata.namespace,
        index,
        text: describeRule(rule),
      }),
    );
  }
  return rules;
}

async function runSuites(drop: RuleRef | undefined): Promise<RunResult> {
  const started = Date.now();
  const report = path.join(mkdtempSync(path.join(tmpdir(), 'swr-rbac-report-')), 'report.json');
  const args = ['vitest', 'run', '--reporter=json', `--outputFile=${report}`, ...SUITES];
  const code = await new Promise<number | null>((done, fail) => {
    const child = spawn('npx', args, {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        [DROP_RULE_ENV]:
          drop === undefined
            ? ''
            : JSON.stringify({
                kind: drop.kind,
                name: drop.name,
                namespace: drop.namespace ?? '',
                index: drop.index,
              }),
        CI: '',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString('utf8')).slice(-4000);
    });
    child.once('error', fail);
    child.once('exit', (c) => {
      if (c !== 0 && c !== 1) process.stderr.write(stderr);
      done(c);
    });
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  let parsed: {
    numPassedTests: number;
    testResults: {
      name: string;
      message?: string;
      assertionResults: { fullName: string; status: string }[];
    }[];
  };
  try {
    parsed = JSON.parse(readFileSync(report, 'utf8')) as typeof parsed;
  } catch {
    return { passed: 0, failed: [], seconds, error: `vitest exited ${code} without a report` };
  } finally {
    rmSync(path.dirname(report), { recursive: true, force: true });
  }
  const failed: string[] = [];
  for (const file of parsed.testResults) {
    const rel = path.relative(REPO_ROOT, file.name);
    const bad = file.assertionResults.filter((a) => a.status === 'failed');
    for (const a of bad) failed.push(`${rel}: ${a.fullName}`);
    // A file that failed before any test ran (e.g. its setup) counts as failed too.
    if (bad.length === 0 && file.message)
      failed.push(`${rel}: (file) ${file.message.slice(0, 120)}`);
  }
  return { passed: parsed.numPassedTests, failed, seconds };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { only: { type: 'string' } } });
  const rules = findRules().filter(
    (r) => values.only === undefined || r.name.includes(values.only),
  );
  const say = (line: string): void => void process.stderr.write(`${line}\n`);
  say(`rbac-rules: ${rules.length} rules; suites: ${SUITES.join(' ')}`);

  const baseline = await runSuites(undefined);
  say(
    `baseline: ${baseline.passed} passed, ${baseline.failed.length} failed (${baseline.seconds} s)`,
  );
  if (baseline.error !== undefined || baseline.failed.length > 0 || baseline.passed === 0) {
    say(baseline.error ?? baseline.failed.join('\n'));
    process.exitCode = 1;
    return;
  }

  const rows: string[] = [
    '| role | rule removed | failing tests | e.g. |',
    '| --- | --- | --- | --- |',
  ];
  let uncovered = 0;
  for (const rule of rules) {
    const result = await runSuites(rule);
    const role = `${rule.kind} ${rule.namespace ? `${rule.namespace}/` : ''}${rule.name}`;
    const example = result.failed[0] ?? result.error ?? '—';
    if (result.failed.length === 0) uncovered++;
    rows.push(
      `| ${role} | ${rule.text} | ${result.failed.length} of ${result.failed.length + result.passed} | ${example.replace(/\|/g, '\\|').slice(0, 160)} |`,
    );
    say(`${role} [${rule.text}]: ${result.failed.length} failed (${result.seconds} s)`);
  }
  process.stdout.write(`${rows.join('\n')}\n`);
  if (uncovered > 0) {
    say(`rbac-rules: ${uncovered} rule(s) can be removed with every test still passing`);
    process.exitCode = 1;
  }
}

await main();
