// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const nodeBuiltins = [
  'assert',
  'async_hooks',
  'buffer',
  'child_process',
  'cluster',
  'crypto',
  'dgram',
  'dns',
  'events',
  'fs',
  'fs/promises',
  'http',
  'http2',
  'https',
  'net',
  'os',
  'path',
  'perf_hooks',
  'process',
  'stream',
  'timers',
  'tls',
  'url',
  'util',
  'worker_threads',
  'zlib',
];

/** The purity rules for the core files `files`; `outside` matches a specifier that leaves shared/core. */
function corePure(files, outside) {
  return {
    files: [files],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'shared/core is pure: no Node built-ins.',
          })),
          patterns: [
            { group: ['node:*'], message: 'shared/core is pure: no node:* imports.' },
            { group: ['express', 'express/*'], message: 'shared/core is pure: no express.' },
            { group: ['@kubernetes/*'], message: 'shared/core is pure: no Kubernetes client.' },
            { group: ['pino', 'pino/*', 'pino-*'], message: 'shared/core is pure: no logger.' },
            {
              group: ['cloudevents', 'cloudevents/*'],
              message: 'shared/core is pure: no CloudEvents SDK.',
            },
            { regex: outside, message: 'shared/core imports only shared/core.' },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'shared/core is pure: configuration is passed in.' },
        { name: 'fetch', message: 'shared/core is pure: no I/O.' },
        { name: 'setTimeout', message: 'shared/core is pure: no timers.' },
        { name: 'setInterval', message: 'shared/core is pure: no timers.' },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: 'shared/core is pure: time is passed in.',
        },
        {
          selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']",
          message: 'shared/core is pure: time is passed in.',
        },
      ],
    },
  };
}

/**
 * A shared layer (one flat folder) imports only the layers below it: not the shared folders in
 * `above`, except the specifiers matching `except` (a regex), and never functions/.
 */
function layer(files, above, message, except) {
  const allowed = except !== undefined ? `(?!(?:${except})$)` : '';
  return {
    files: [files],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...(above.length > 0
              ? [{ regex: `^\\.\\./${allowed}(?:${above.join('|')})/`, message: `${message}.` }]
              : []),
            { regex: '^(?:\\.\\./)+functions/', message: `${message}: never functions/.` },
          ],
        },
      ],
    },
  };
}

export default tseslint.config(
  {
    ignores: ['dist/**', 'coverage/**', 'node_modules/**', 'test/apiserver/.cache/**', '.cache/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'no-console': 'off',
    },
  },
  // The decision core is pure: no I/O, no clocks, no frameworks. Time is passed in. Its files sit
  // at shared/core/ (index.ts) and one folder down, by topic; each imports only shared/core.
  corePure('shared/core/*.ts', '^\\.\\./'),
  corePure('shared/core/*/*.ts', '^\\.\\./\\.\\./'),
  // The layers: functions -> shared/recovery -> shared/runtime -> shared/kube -> shared/core,
  // imports only downward. One exception: the API transport reads the delivery's abort signal
  // (shared/runtime/delivery.ts, docs/adr/0057).
  layer(
    'shared/kube/**/*.ts',
    ['runtime', 'recovery'],
    'shared/kube imports only shared/core',
    'runtime/delivery\\.js',
  ),
  layer(
    'shared/runtime/**/*.ts',
    ['recovery'],
    'shared/runtime imports only shared/kube and shared/core',
  ),
  layer(
    'shared/recovery/**/*.ts',
    [],
    'shared/recovery imports only shared/runtime, shared/kube and shared/core',
  ),
  {
    // toolchain/with-node.cjs runs before the right Node is chosen, on any Node: plain CommonJS.
    files: ['**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', process: 'readonly', __dirname: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // process.env is read in exactly one place: the config loader.
    files: ['functions/**/*.ts', 'shared/**/*.ts'],
    ignores: ['shared/runtime/env.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'Read configuration through shared/runtime/env.ts only.',
        },
      ],
    },
  },
);
