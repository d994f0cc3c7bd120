// Nothing of the project reads outside the repository's root (issue 31): no test, no script, no
// `npm start`, no bench, no doc command builds a path to a folder beside the clone. The rules
// (support/repository-bounds.ts) are tried on one row per way of climbing out, and then run over
// every project file. This file's rows are data: the whole-tree scan leaves this one file out.

import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../support/carried-files.js';
import { outsideReferences, scanRepository } from '../../support/repository-bounds.js';

const THIS_FILE = 'test/unit/setup/repository-bounds.test.ts';
const ROOT = '/repo';

describe('outsideReferences', () => {
  it.each([
    ['test/support/x.ts', "const d = join(REPO_ROOT, '..', 'shared', 'crds');", true],
    ['test/support/x.ts', "const d = resolve(ROOT, '..');", true],
    [
      'test/support/x.ts',
      "const d = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');",
      true,
    ],
    [
      'test/support/x.ts',
      "const d = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');",
      false,
    ],
    ['test/unit/core/x.ts', "import { a } from '../../../../shared/core/index.js';", true],
    ['test/unit/core/x.ts', "import { a } from '../../../shared/core/index.js';", false],
    ['test/x.ts', "readFileSync('../shared/traces/S1.jsonl')", true],
    ['test/x.ts', "const brief = '/work/shared/DESIGN.md';", true],
    ['test/x.ts', "// the brief's /work/shared/DESIGN.md", true],
    ['test/x.ts', "// resolve(ROOT, '..') in a comment builds nothing", false],
    ['eslint.config.js', "group: ['../kube/*', '../../functions/*'],", false],
    ['.ci/run', 'cd "$(dirname "$0")/.."', false],
    ['.ci/run', 'cd "$(dirname "$0")/../.."', true],
    ['.ci/image/build.sh', 'cd "$(dirname "${BASH_SOURCE[0]}")/../.."', false],
    ['.ci/image/build.sh', 'ls ../shared/crds', true],
    ['README.md', 'the CRDs of `../shared/crds/`', true],
    ['README.md', 'the CRDs of `test/third_party/crds/`', false],
    ['docs/adr/0006-x.md', 'imports from `../../shared`', false],
    ['package.json', '"start": "tsx test/harness/start.ts"', false],
    ['test/recorded/x.bin', '../shared/crds', false],
  ])('%s: %s → outside %s', (file, line, outside) => {
    expect(outsideReferences(ROOT, file, `first line\n${line}\n`).length > 0).toBe(outside);
  });

  it.each([
    ["path.join(\n  REPO_ROOT,\n  '..',\n  'shared',\n  'crds',\n)", 2],
    ["resolve(\n  ROOT,\n  '..'\n)", 2],
  ])('sees a climb written over several lines: %j', (code, count) => {
    const found = outsideReferences(ROOT, 'test/unit/x.test.ts', `const a = 1;\n${code};\n`);
    expect(found.length).toBeGreaterThan(0);
    expect(found[0]?.line).toBe(count);
  });

  it('names the file and line', () => {
    expect(outsideReferences(ROOT, 'a/b.ts', "x\nconst p = '../../../c';")).toEqual([
      {
        file: 'a/b.ts',
        line: 2,
        text: "const p = '../../../c';",
        why: 'a relative path above the root',
      },
    ]);
  });
});

describe('the repository', () => {
  it('builds no path outside its root in any of its files', () => {
    const found = scanRepository(REPO_ROOT).filter((r) => r.file !== THIS_FILE);
    expect(found).toEqual([]);
  });
});
