// Finds the places in the repository's own files that build a path outside the repository's root
// (issue 31: a clone with nothing beside it must run `npm start` and `npm test`). Pure text rules,
// no I/O but the walk: a relative path literal that climbs above the root from its file's folder,
// `join(ROOT, '..')` and the like, `dirname(import.meta.url)` climbing too far, a shell `dirname`
// climbing too far, and any absolute path into this workplace or the brief beside the clone.

import { readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, isAbsolute, join, relative, resolve, sep } from 'node:path';

export interface OutsideReference {
  /** Path relative to the root. */
  readonly file: string;
  readonly line: number;
  readonly text: string;
  readonly why: string;
}

/** Folders that are not the project's own files (dependencies, caches, carried data, git). */
const SKIPPED_DIRS = new Set([
  '.git',
  'node_modules',
  '.cache',
  'dist',
  'coverage',
  'recorded',
  'third_party',
]);
const CODE = new Set(['.ts', '.js', '.cjs', '.mjs', '.go']);
const SHELL = new Set(['.sh']);
const PROSE = new Set(['.md', '.json', '.yaml', '.yml']);
const NAMED = new Map([
  ['run', 'shell'],
  ['Dockerfile', 'shell'],
  ['before-stop', 'shell'],
]);

type Kind = 'code' | 'shell' | 'prose';

function kindOf(file: string): Kind | undefined {
  const base = file.split(sep).at(-1) ?? file;
  const named = NAMED.get(base);
  if (named !== undefined) return named as Kind;
  if (base === 'package-lock.json') return undefined;
  const ext = extname(base);
  if (CODE.has(ext)) return 'code';
  if (SHELL.has(ext)) return 'shell';
  if (PROSE.has(ext)) return 'prose';
  return undefined;
}

/** Paths that name this machine's workplace or the brief folder beside the clone. */
const FOREIGN = [
  {
    re: /\/work\/(?:shared|main|\.library|\.mirror|tools|wt-)/,
    why: 'an absolute path on one machine',
  },
  {
    re: /\.\.\/shared\/(?:crds|traces|seed|hooks|DESIGN|REAL-PARTS)/,
    why: 'the brief beside the clone',
  },
  { re: /['"]\.\.['"]\s*,\s*['"]shared['"]/, why: 'the brief beside the clone' },
];

/** `join(REPO_ROOT, '..')`, `resolve(ROOT, '..', …)`: a root climbed above. */
const ROOT_CLIMB = /\b(?:join|resolve)\(\s*[A-Za-z_]*ROOT[A-Za-z_]*\s*,\s*['"]\.\.['"]/;
/** `resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')`: counts the climbs. */
const MODULE_DIR_CLIMB =
  /\b(?:join|resolve)\(\s*dirname\(\s*fileURLToPath\(\s*import\.meta\.url\s*\)\s*\)\s*((?:,\s*['"]\.\.['"]\s*)+)/;
/** A string literal that starts with `../` (import specifiers included). */
const RELATIVE_LITERAL = /(['"`])((?:\.\.\/)+[^'"`$\s]*)\1/g;
/** `$(dirname "$0")/../..` or `$(dirname "${BASH_SOURCE[0]}")/..`. */
const SHELL_DIRNAME_CLIMB = /\$\(dirname\s+"?\$(?:0|\{BASH_SOURCE\[0\]\})"?\)((?:\/\.\.)+)/;

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/** The outside references in one file's text (`file` relative to `root`). */
export function outsideReferences(root: string, file: string, text: string): OutsideReference[] {
  const kind = kindOf(file);
  if (kind === undefined) return [];
  const dir = dirname(join(root, file));
  const found: OutsideReference[] = [];
  const lines = text.split('\n');
  lines.forEach((lineText, i) => {
    const at = (why: string): void => {
      found.push({ file, line: i + 1, text: lineText.trim().slice(0, 160), why });
    };
    for (const { re, why } of FOREIGN) if (re.test(lineText)) at(why);
    // A comment builds no path; a glob (eslint's import patterns) names no file.
    if (kind === 'code' && !/^\s*(?:\/\/|\/?\*)/.test(lineText)) {
      if (ROOT_CLIMB.test(lineText)) at('the repository root climbed above');
      const m = MODULE_DIR_CLIMB.exec(lineText);
      if (m !== null) {
        const ups = (m[1] ?? '').split(',').filter((s) => s.includes('..')).length;
        if (!inside(root, resolve(dir, ...Array<string>(ups).fill('..')))) {
          at('the module folder climbed above the root');
        }
      }
      for (const lit of lineText.matchAll(RELATIVE_LITERAL)) {
        if (lit[2]?.includes('*') === true) continue;
        if (!inside(root, resolve(dir, lit[2] ?? ''))) at('a relative path above the root');
      }
    }
    if (kind === 'shell') {
      const m = SHELL_DIRNAME_CLIMB.exec(lineText);
      if (m !== null) {
        const ups = (m[1] ?? '').split('/').filter((s) => s === '..').length;
        if (!inside(root, resolve(dir, ...Array<string>(ups).fill('..')))) {
          at("the script's folder climbed above the root");
        }
      }
    }
  });
  if (kind === 'code') found.push(...acrossLines(file, text, lines));
  return found;
}

/**
 * The same climbs written over several lines (a call formatted one argument a line): the text
 * with comments blanked and white space folded, each match named by the line it starts on.
 */
function acrossLines(file: string, text: string, lines: readonly string[]): OutsideReference[] {
  const code = text.replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' '));
  const found: OutsideReference[] = [];
  const rules: { re: RegExp; why: string }[] = [
    {
      re: /\b(?:join|resolve)\(\s*[A-Za-z_]*ROOT[A-Za-z_]*\s*,\s*['"]\.\.['"]/g,
      why: 'the repository root climbed above',
    },
    { re: /['"]\.\.['"]\s*,\s*['"]shared['"]/g, why: 'the brief beside the clone' },
  ];
  for (const { re, why } of rules) {
    for (const m of code.matchAll(re)) {
      if (!m[0].includes('\n')) continue; // one line: the line rules have it
      const line = code.slice(0, m.index).split('\n').length;
      found.push({ file, line, text: (lines[line - 1] ?? '').trim().slice(0, 160), why });
    }
  }
  return found;
}

/** Every project file under `root` (the skipped folders left out), relative to it. */
export function projectFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) walk(join(d, entry.name));
      } else if (entry.isFile()) {
        out.push(relative(root, join(d, entry.name)));
      }
    }
  };
  walk(root);
  return out.sort();
}

/** Every outside reference in the project's files under `root`. */
export function scanRepository(root: string): OutsideReference[] {
  return projectFiles(root).flatMap((file) =>
    outsideReferences(root, file, readFileSync(join(root, file), 'utf8')),
  );
}
