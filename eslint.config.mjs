// Lint rules that matter for Temporal: promises must be awaited (a floating promise in a
// workflow or activity silently loses errors) and workflow code may not touch Node built-ins
// or I/O libraries, because workflows are replayed and must stay deterministic.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = builtinModules.flatMap((m) => [m, `node:${m}`]);
/** contract/ is one flat folder: any `../` leaves it. */
const leavesContract = {
  regex: '^\\.\\./',
  message: 'contract/ imports nothing of ours (only libraries): everything else imports it.',
};

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      '.tools/**',
      '.data/**',
      'bench-results/**',
      // The client library's build, and its types generated from /openapi.json (npm run client:types).
      'clients/typescript/dist/**',
      'clients/typescript/node_modules/**',
      'clients/typescript/src/schema.ts',
    ],
  },
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
  // Import directions (docs/contributors.md "Layout"). Which folder may import which, and only
  // through its index.ts / workflows.ts, and no cycles: .dependency-cruiser.cjs (npm run lint:deps).
  // Here, what a file of each role may import. A file's rule list is complete in its own entry:
  // flat config replaces a rule's options per file, it does not merge them.
  {
    files: ['contract/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [leavesContract] }] },
  },
  {
    // Workflow code: the *.workflow.ts files, each folder's workflows.ts surface and the bundle's
    // entry (src/worker/workflows.ts). It is replayed and must stay deterministic.
    files: ['src/**/*.workflow.ts', 'src/*/workflows.ts'],
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
              regex: '\\.(activities|service|routes|schedule)$',
              allowTypeImports: true,
              message:
                'Workflow code imports only the types of activities (import type), and nothing of services, routes or schedules.',
            },
            {
              // zod in the workflow bundle costs memory per cached workflow (contract/review-decision.ts).
              group: ['zod', 'zod/*', '**/contract/schemas', '**/contract/provider'],
              allowTypeImports: true,
              message:
                'Keep zod out of the workflow bundle: import types only (checks: contract/review-decision.ts).',
            },
            {
              // Evaluated per cached workflow: only traced orders load it (src/worker/interceptors.workflow.ts).
              group: [
                '@opentelemetry/*',
                '@temporalio/interceptors-opentelemetry',
                '@temporalio/interceptors-opentelemetry/*',
              ],
              allowTypeImports: true,
              message:
                'OpenTelemetry is required lazily, for traced orders only (src/worker/interceptors.workflow.ts): import types only.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/**/*.activities.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(\\.workflow|/workflows)$',
              message: 'Activities never import workflow code: what they share is in contract/.',
            },
          ],
        },
      ],
    },
  },
  {
    // Node-side code of the areas and platform folders: workflow code runs in the bundle, which
    // only the worker assembles (src/worker/workflows.ts, bundle.ts).
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.workflow.ts', 'src/*/workflows.ts', 'src/worker/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(\\.workflow|/workflows)$',
              message:
                'Node-side code never imports workflow code: only the worker assembles the bundle (src/worker/).',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
);
