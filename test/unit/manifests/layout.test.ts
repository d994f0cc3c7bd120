// The layout of knative/ (docs/operations.md): base/ holds what every install shares, and each
// function of functions/<name>/ is one kustomize Component in knative/functions/<name>/ holding
// its own Service and ServiceAccount. The entry points list base/ and the function Components;
// components/image comes last (it sets the image of every Service the Components add).

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  KNATIVE_DIR,
  loadKustomizationResources,
  REPO_ROOT,
  type K8sObject,
} from '../../support/manifests.js';
import { ENTRY_POINTS } from './renders.js';

interface Kustomization {
  kind?: string;
  resources?: string[];
  components?: string[];
}

const read = (dir: string): Kustomization =>
  parse(readFileSync(path.join(REPO_ROOT, dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
const dirsOf = (dir: string): string[] =>
  readdirSync(dir)
    .filter((d) => statSync(path.join(dir, d)).isDirectory())
    .sort();
/** A kustomization's entries, relative to knative/. */
const listed = (dir: string, field: 'resources' | 'components'): string[] =>
  (read(dir)[field] ?? []).map((e) =>
    path
      .relative(KNATIVE_DIR, path.resolve(REPO_ROOT, dir, e))
      .split(path.sep)
      .join('/'),
  );

const FUNCTIONS = dirsOf(path.join(REPO_ROOT, 'functions'));
const FUNCTION_COMPONENTS = dirsOf(path.join(KNATIVE_DIR, 'functions'));
const has = (objects: readonly K8sObject[], kind: string, name: string): boolean =>
  objects.some((o) => o.kind === kind && o.metadata.name === name);

describe('knative/functions/<name>/', () => {
  it('is there for each function of functions/, and for nothing else', () => {
    expect(FUNCTIONS.length).toBeGreaterThanOrEqual(5);
    expect(FUNCTION_COMPONENTS).toEqual(FUNCTIONS);
  });

  it.each(FUNCTIONS)('%s: a Component with its own Service and ServiceAccount', (name) => {
    const dir = `knative/functions/${name}`;
    expect(read(dir).kind).toBe('Component');
    const objects = loadKustomizationResources(dir);
    expect(has(objects, 'Service', name)).toBe(true);
    expect(has(objects, 'ServiceAccount', name)).toBe(true);
    // No other function's Service: each Component holds one function.
    const services = objects.filter((o) => o.kind === 'Service').map((o) => o.metadata.name);
    expect(services).toEqual([name]);
  });

  it('holds no kustomization that is not a Component (functions/*/* included)', () => {
    const kustomizations = readdirSync(path.join(KNATIVE_DIR, 'functions'), { recursive: true })
      .map(String)
      .filter((f) => path.basename(f) === 'kustomization.yaml')
      .map((f) => `knative/functions/${path.dirname(f).split(path.sep).join('/')}`);
    expect(kustomizations.length).toBeGreaterThan(FUNCTIONS.length);
    for (const dir of kustomizations) expect(read(dir).kind, dir).toBe('Component');
  });
});

describe('knative/base/', () => {
  it('is a Kustomization with no Service: the functions bring theirs', () => {
    expect(read('knative/base').kind).toBe('Kustomization');
    expect(loadKustomizationResources('knative/base').filter((o) => o.kind === 'Service')).toEqual(
      [],
    );
  });
});

describe.each(ENTRY_POINTS)('entry point %s', (entry) => {
  it('lists base/, function Components before components/names, components/image last', () => {
    expect(listed(entry, 'resources')).toContain('base');
    const components = listed(entry, 'components');
    const functions = components.filter((c) => c.startsWith('functions/'));
    for (const fn of ['detect', 'force-drift', 'dead-letter']) {
      expect(functions).toContain(`functions/${fn}`);
    }
    for (const c of functions) expect(existsSync(path.join(KNATIVE_DIR, c)), c).toBe(true);
    const lastFunction = Math.max(...functions.map((c) => components.indexOf(c)));
    expect(components.indexOf('components/names')).toBeGreaterThan(lastFunction);
    expect(components.at(-1)).toBe('components/image');
  });
});

it('knative/ lists every function Component (the full install)', () => {
  const all = readdirSync(path.join(KNATIVE_DIR, 'functions'), { recursive: true })
    .map(String)
    .filter((f) => path.basename(f) === 'kustomization.yaml')
    .map((f) => `functions/${path.dirname(f).split(path.sep).join('/')}`)
    .sort();
  expect(
    listed('knative', 'components')
      .filter((c) => c.startsWith('functions/'))
      .sort(),
  ).toEqual(all);
});
