// Lint rules that matter for Temporal: promises must be awaited (a floating promise in a
// workflow or activity silently loses errors) and workflow code may not touch Node built-ins
// or I/O libraries, because workflows are replayed and must stay deterministic.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = builtinModules.flatMap((m) => [m, `node:${m}`]);

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.tools/**', '.data/**', 'bench-results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test's describe/it return promises the runner itself awaits.
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [...nodeBuiltins, 'undici', 'express', 'pino'].map((name) => ({
            name,
            message: 'Workflows must stay deterministic: do I/O in activities.',
          })),
          patterns: [
            {
              group: ['**/activities/*', '!**/activities/*.types'],
              allowTypeImports: true,
              message: 'Workflows import only the types of activities (import type).',
            },
            {
              // zod in the workflow bundle costs memory per cached workflow (contract/review-decision.ts).
              group: [
                'zod',
                'zod/*',
                '**/contract/schemas',
                '**/src/provider',
                '**/src/provider/*',
                '**/src/config',
                '**/api/*',
              ],
              allowTypeImports: true,
              message:
                'Keep zod out of the workflow bundle: import types only (checks: contract/review-decision.ts).',
            },
            {
              // Evaluated per cached workflow: only traced orders load it (workflows/interceptors.ts).
              group: [
                '@opentelemetry/*',
                '@temporalio/interceptors-opentelemetry',
                '@temporalio/interceptors-opentelemetry/*',
              ],
              allowTypeImports: true,
              message:
                'OpenTelemetry is required lazily, for traced orders only (workflows/interceptors.ts): import types only.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
);
