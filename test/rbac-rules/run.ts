// `npm run test:rbac-rules`: removing any single RBAC rule from knative/ makes at least one test
// fail. For each rule of each Role and ClusterRole in the package, it copies knative/ with that one
// rule removed, runs a fixed set of suites against a fresh test cluster whose RBAC is installed
// from the copy (SWR_KNATIVE_DIR, test/setup/cluster-rbac.ts), and records which tests fail. A
// baseline run with nothing removed must pass first. Prints a Markdown table; exits 1 when any
// removal leaves every test green (a rule no test needs) or the baseline fails.
//
//   npm run test:rbac-rules                 every rule
//   npm run test:rbac-rules -- --only detect  rules whose role name contains "detect"

import { spawn } from 'node:child_process';
import {
  cpSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseAllDocuments, isMap, isSeq, type Document } from 'yaml';
import { KNATIVE_DIR_ENV } from '../setup/cluster-rbac.js';
import { KNATIVE_DIR, REPO_ROOT } from '../support/manifests.js';

/** The suites each run executes: every function under its own ServiceAccount, and the e2e flow. */
export const SUITES = [
  'test/integration/functions/',
  'test/integration/control-plane.test.ts',
  'test/e2e/rbac-from-behaviour.test.ts',
];

interface RuleRef {
  /** File relative to knative/. */
  file: string;
  /** Index of the YAML document in the file. */
  doc: number;
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

function listYamlFiles(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) out.push(...listYamlFiles(full, base));
    else if (entry.endsWith('.yaml')) out.push(path.relative(base, full));
  }
  return out;
}

function describeRule(rule: Record<string, unknown>): string {
  const list = (k: string): string =>
    Array.isArray(rule[k]) ? (rule[k] as string[]).join(',') : '';
  const names = list('resourceNames');
  return `${list('verbs')} ${list('resources')}${names ? ` (names: ${names})` : ''}`;
}

/** Every rule of every Role and ClusterRole in knative/ (overlays included). */
export function findRules(root: string = KNATIVE_DIR): RuleRef[] {
  const rules: RuleRef[] = [];
  for (const file of listYamlFiles(root)) {
    const docs = parseAllDocuments(readFileSync(path.join(root, file), 'utf8'));
    docs.forEach((doc, d) => {
      const o = doc.toJS() as Record<string, unknown> | null;
      if (o === null || (o['kind'] !== 'Role' && o['kind'] !== 'ClusterRole')) return;
      const meta = o['metadata'] as { name: string; namespace?: string };
      const list = (o['rules'] ?? []) as Record<string, unknown>[];
      list.forEach((rule, index) =>
        rules.push({
          file,
          doc: d,
          kind: o['kind'] as string,
          name: meta.name,
          namespace: meta.namespace,
          index,
          text: describeRule(rule),
        }),
      );
    });
  }
  return rules;
}

/** A copy of knative/ in a new temporary directory with one rule removed (comments kept). */
function copyWithout(rule: RuleRef | undefined): { dir: string; cleanup: () => void } {
  const parent = mkdtempSync(path.join(tmpdir(), 'swr-rbac-rules-'));
  const dir = path.join(parent, 'knative');
  cpSync(KNATIVE_DIR, dir, { recursive: true });
  if (rule !== undefined) {
    const file = path.join(dir, rule.file);
    const docs: Document[] = parseAllDocuments(readFileSync(file, 'utf8')) as Document[];
    const target = docs[rule.doc];
    const rules = target?.get('rules');
    if (target === undefined || !isSeq(rules) || !isMap(rules.items[rule.index])) {
      throw new Error(
        `cannot find rule ${rule.index} of ${rule.kind} ${rule.name} in ${rule.file}`,
      );
    }
    rules.items.splice(rule.index, 1);
    const texts = docs.map((d, i) => {
      const text = d.toString();
      return i === 0 || text.startsWith('---') ? text : `---\n${text}`;
    });
    writeFileSync(file, texts.join(''));
  }
  return { dir, cleanup: () => rmSync(parent, { recursive: true, force: true }) };
}

async function runSuites(knativeDir: string): Promise<RunResult> {
  const started = Date.now();
  const report = path.join(mkdtempSync(path.join(tmpdir(), 'swr-rbac-report-')), 'report.json');
  const args = ['vitest', 'run', '--reporter=json', `--outputFile=${report}`, ...SUITES];
  const code = await new Promise<number | null>((done, fail) => {
    const child = spawn('npx', args, {
      cwd: REPO_ROOT,
      env: { ...process.env, [KNATIVE_DIR_ENV]: knativeDir, CI: '' },
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

  const base = copyWithout(undefined);
  const baseline = await runSuites(base.dir);
  base.cleanup();
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
    const copy = copyWithout(rule);
    const result = await runSuites(copy.dir);
    copy.cleanup();
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
