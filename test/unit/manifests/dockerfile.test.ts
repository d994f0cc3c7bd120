// The Dockerfile, read: multi-stage on a Node LTS image, production dependencies only in the final
// stage, non-root, default entry point a real function; and .dockerignore lets in exactly what the
// build copies. CI also builds it with podman and runs the image (.ci/image/, test/image/,
// docs/adr/0035-image-built-in-ci.md).

import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../support/manifests.js';
import { base } from './renders.js';

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  from: string;
  name: string | undefined;
  body: Instruction[];
}

/** Instructions with continuation lines joined and comments dropped. */
function instructions(text: string): Instruction[] {
  const joined = text
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .join('\n')
    .replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .map((l) => {
      const m = /^(\S+)\s*(.*)$/.exec(l) as RegExpExecArray;
      return { op: (m[1] ?? '').toUpperCase(), args: m[2] ?? '' };
    });
}

function stages(text: string): { args: Record<string, string>; stages: Stage[] } {
  const args: Record<string, string> = {};
  const out: Stage[] = [];
  for (const ins of instructions(text)) {
    if (ins.op === 'ARG' && out.length === 0) {
      const [k, v] = ins.args.split('=');
      if (k !== undefined && v !== undefined) args[k] = v;
    } else if (ins.op === 'FROM') {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (m === null) throw new Error(`bad FROM: ${ins.args}`);
      const image = (m[1] ?? '').replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a, b) => args[a ?? b] ?? '');
      out.push({ from: image, name: m[2], body: [] });
    } else if (out.length > 0) {
      out[out.length - 1]?.body.push(ins);
    }
  }
  return { args, stages: out };
}

const dockerfile = () => readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8');
const parsed = () => stages(dockerfile());
const finalStage = (): Stage => {
  const s = parsed().stages;
  return s[s.length - 1] as Stage;
};
const runs = (stage: Stage): string[] =>
  stage.body.filter((i) => i.op === 'RUN').map((i) => i.args);

describe('Dockerfile', () => {
  it('is multi-stage, every stage on a slim Node image (its major: node-version.test.ts)', () => {
    const { stages: all } = parsed();
    expect(all.length).toBeGreaterThanOrEqual(2);
    for (const s of all) expect(s.from).toMatch(/^node:\d+(\.\d+)*-(alpine|bookworm-slim)$/);
  });

  it('builds in a named stage: npm ci (all deps), then npm run build', () => {
    const build = parsed().stages[0] as Stage;
    expect(build.name).toBeDefined();
    expect(runs(build).some((r) => /^npm ci\b/.test(r) && !r.includes('--omit=dev'))).toBe(true);
    expect(runs(build).some((r) => /\bnpm run build\b/.test(r))).toBe(true);
  });

  it('final stage installs production deps only and copies dist/ from the build', () => {
    const final = finalStage();
    const npm = runs(final).filter((r) => /\bnpm\b/.test(r));
    expect(npm.length).toBeGreaterThan(0);
    for (const r of npm) {
      expect(r).toMatch(/npm ci\b.*--omit=dev/);
      expect(r).not.toMatch(/npm (run|install|i)\b/);
    }
    const copies = final.body.filter((i) => i.op === 'COPY');
    const fromBuild = copies.filter((c) => c.args.startsWith(`--from=${parsed().stages[0]?.name}`));
    expect(fromBuild.map((c) => c.args.split(/\s+/)[1])).toEqual(['/app/dist']);
    // Nothing else of the source tree reaches the runtime image.
    for (const c of copies.filter((c) => !c.args.startsWith('--from='))) {
      expect(c.args).toMatch(/^package\.json package-lock\.json \S+$/);
    }
  });

  it('runs as a numeric non-root user (Kubernetes can verify runAsNonRoot)', () => {
    const users = finalStage().body.filter((i) => i.op === 'USER');
    expect(users.length).toBeGreaterThan(0);
    const user = (users[users.length - 1] as Instruction).args;
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(Number(user.split(':')[0])).toBeGreaterThan(0);
  });

  it('defaults to a real entry point, the one detect runs', () => {
    const cmd = finalStage().body.filter((i) => i.op === 'CMD');
    expect(cmd).toHaveLength(1);
    const argv = JSON.parse((cmd[0] as Instruction).args) as string[];
    const detect = base().find((o) => o.kind === 'Service' && o.metadata.name === 'detect');
    const command = (
      detect?.spec as { template: { spec: { containers: { command: string[] }[] } } }
    ).template.spec.containers[0]?.command;
    expect(argv).toEqual(command);
    expect(existsSync(path.join(REPO_ROOT, 'tsconfig.build.json'))).toBe(true);
  });

  it('copies every file the build reads (tsconfig.build.json and what it extends)', () => {
    const build = parsed().stages[0] as Stage;
    const copied = build.body
      .filter((i) => i.op === 'COPY')
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    const buildConfig = JSON.parse(
      readFileSync(path.join(REPO_ROOT, 'tsconfig.build.json'), 'utf8'),
    ) as { extends?: string; include?: string[] };
    const needed = ['package.json', 'package-lock.json', 'tsconfig.build.json'];
    if (buildConfig.extends !== undefined) needed.push(path.normalize(buildConfig.extends));
    for (const inc of buildConfig.include ?? []) needed.push(inc.split('/')[0] ?? inc);
    for (const n of needed) expect(copied, n).toContain(n.replace(/^\.\//, ''));
  });
});

/** Docker's .dockerignore: the last matching pattern wins; a pattern also covers what is under it. */
function ignored(patterns: string[], file: string): boolean {
  let result = false;
  for (const raw of patterns) {
    const negate = raw.startsWith('!');
    const pattern = (negate ? raw.slice(1) : raw).replace(/\/$/, '');
    const re = new RegExp(
      '^' +
        pattern
          .split('/')
          .map((seg) =>
            seg === '**'
              ? '(?:.*)'
              : seg
                  .replace(/[.+^${}()|[\]\\]/g, '\\$&')
                  .replace(/\*/g, '[^/]*')
                  .replace(/\?/g, '[^/]'),
          )
          .join('/')
          .replace(/\(\?:\.\*\)\//g, '(?:.*/)?') +
        '(?:/.*)?$',
    );
    if (re.test(file)) result = !negate;
  }
  return result;
}

describe('.dockerignore', () => {
  const patterns = () =>
    readFileSync(path.join(REPO_ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));

  it.each([
    ['package.json', false],
    ['package-lock.json', false],
    ['tsconfig.json', false],
    ['tsconfig.build.json', false],
    ['functions/detect/main.ts', false],
    ['shared/core/decide.ts', false],
    ['shared/core/decide.test.ts', true],
    ['node_modules/express/index.js', true],
    ['dist/functions/detect/main.js', true],
    ['test/unit/manifests/dockerfile.test.ts', true],
    ['test/apiserver/.cache/bin/apiserver', true],
    ['.git/HEAD', true],
    ['knative/core/service-detect.yaml', true],
    ['coverage/index.html', true],
  ])('%s ignored: %s', (file, expected) => {
    expect(ignored(patterns(), file)).toBe(expected);
  });
});
