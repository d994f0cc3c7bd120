import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { KubeConfigError, loadKubeConfig } from '../../../shared/kube/config.js';

const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => {
  vi.unstubAllEnvs();
});

const TOKEN = 'tok-very-secret-123';

function kubeconfig(server: string, token = TOKEN): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: c\n  cluster:\n    server: ${server}\n    insecure-skip-tls-verify: true`,
    'users:',
    `- name: u\n  user:\n    token: ${token}`,
    'contexts:',
    '- name: ctx\n  context:\n    cluster: c\n    user: u',
    'current-context: ctx',
    '',
  ].join('\n');
}

function writeFile(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

const explicitPath = writeFile('explicit.yaml', kubeconfig('https://explicit.example:6443'));
const envPath = writeFile('env.yaml', kubeconfig('https://from-env.example:6443'));
const noContextPath = writeFile('no-context.yaml', 'apiVersion: v1\nkind: Config\nclusters: []\n');
const brokenPath = writeFile('broken.yaml', `users: [ {{ token: ${TOKEN}\n`);
const emptyHome = mkdtempSync(join(dir, 'home-'));

describe('loadKubeConfig', () => {
  it.each([
    ['explicit path, no KUBECONFIG', explicitPath, undefined, 'https://explicit.example:6443'],
    ['explicit path wins over KUBECONFIG', explicitPath, envPath, 'https://explicit.example:6443'],
    ['KUBECONFIG when no explicit path', undefined, envPath, 'https://from-env.example:6443'],
    ['empty explicit path falls back to KUBECONFIG', '', envPath, 'https://from-env.example:6443'],
  ])('%s', (_name, path, env, server) => {
    vi.stubEnv('KUBECONFIG', env ?? '');
    vi.stubEnv('HOME', emptyHome);
    const kc = loadKubeConfig(path !== undefined ? { kubeconfigPath: path } : {});
    expect(kc.getCurrentCluster()?.server).toBe(server);
    expect(kc.getCurrentUser()?.token).toBe(TOKEN);
  });

  it.each([
    [
      'a missing file',
      join(dir, 'does-not-exist.yaml'),
      /cannot load kubeconfig file .*does-not-exist/,
    ],
    ['a file that is not YAML', brokenPath, /cannot load kubeconfig file .*broken\.yaml/],
    ['a file without a current cluster', noContextPath, /no current cluster/],
  ])('refuses %s with a clear error that quotes no file contents', (_name, path, message) => {
    let caught: unknown;
    try {
      loadKubeConfig({ kubeconfigPath: path });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(KubeConfigError);
    expect((caught as Error).message).toMatch(message);
    expect((caught as Error).message).not.toContain(TOKEN);
  });

  it('without any kubeconfig: in-cluster when a service account is mounted, else a clear error', () => {
    vi.stubEnv('KUBECONFIG', '');
    vi.stubEnv('HOME', emptyHome);
    if (existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token')) {
      expect(loadKubeConfig().getCurrentCluster()?.name).toBe('inCluster');
    } else {
      expect(() => loadKubeConfig()).toThrow(/no kubeconfig found/);
    }
  });
});
