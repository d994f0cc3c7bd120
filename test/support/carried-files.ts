// The data files the project carries for its tests (test/third_party/: verbatim upstream CRDs;
// test/recorded/: recordings of the real source-watcher), each folder with a SHA256SUMS that lists
// every file it holds. Tests read them only through here, so a changed, missing or unlisted file
// fails with its name instead of running on other data than the recorded one. Nothing here reads
// outside the repository (test/unit/setup/repository-bounds.test.ts checks the whole tree).

import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root (test/support/ is two levels down). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The verbatim upstream CRDs (provenance, license and checksums in test/third_party/). */
export const CARRIED_CRD_DIR = join(REPO_ROOT, 'test', 'third_party', 'crds');
/** The recorded traces of the real source-watcher v2.1.0 (see the README there). */
export const TRACES_DIR = join(REPO_ROOT, 'test', 'recorded', 'source-watcher-v2.1.0');

export const SUMS_FILE = 'SHA256SUMS';

export interface CarriedFile {
  /** The path relative to the folder, as SHA256SUMS names it. */
  readonly name: string;
  readonly path: string;
  readonly bytes: Buffer;
}

/** `dir`/SHA256SUMS as (checksum, relative path) pairs; a bad line is an error naming it. */
export function readSums(dir: string): { sha256: string; name: string }[] {
  const sumsPath = join(dir, SUMS_FILE);
  let text: string;
  try {
    text = readFileSync(sumsPath, 'utf8');
  } catch (e) {
    throw new Error(
      `carried test data missing: ${sumsPath} (${(e as Error).message}); ` +
        'the repository carries it (git checkout it again)',
      { cause: e },
    );
  }
  const out: { sha256: string; name: string }[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const m = /^([0-9a-f]{64})\s+\*?(\S+)$/.exec(line.trim());
    if (m === null) throw new Error(`${sumsPath}: bad line ${JSON.stringify(line)}`);
    out.push({ sha256: m[1] as string, name: m[2] as string });
  }
  if (out.length === 0) throw new Error(`${sumsPath} lists no file`);
  return out;
}

/**
 * Every file that `dir`/SHA256SUMS lists, read and checked against its checksum. A file listed
 * but missing or changed is an error naming it; so is a file in the folder (matching `keep`)
 * that the list does not name, since it would be read by no one and checked by nothing.
 */
export function verifiedFiles(dir: string, keep: (name: string) => boolean): CarriedFile[] {
  const listed = readSums(dir);
  const names = new Set(listed.map((l) => l.name));
  const unlisted = filesUnder(dir).filter((n) => keep(n) && !names.has(n));
  if (unlisted.length > 0) {
    throw new Error(`${join(dir, SUMS_FILE)} does not list ${unlisted.join(', ')}`);
  }
  return listed
    .filter((l) => keep(l.name))
    .map(({ sha256, name }) => {
      const path = join(dir, name);
      const bytes = readFileSync(path);
      const got = createHash('sha256').update(bytes).digest('hex');
      if (got !== sha256) {
        throw new Error(`${path}: sha256 ${got}, but ${SUMS_FILE} says ${sha256}`);
      }
      return { name, path, bytes };
    });
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}
