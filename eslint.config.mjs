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
  // Import directions (docs/contributors.md "Where code lives"): contract/ imports nothing of
  // ours; workflows import the contract and the activities' types; activities the contract, the
  // provider client and the webhook sender; src/ the contract, never workflow or activity code,
  // except the worker, which assembles them. A folder's rule list is complete in its own entry:
  // flat config replaces a rule's options per file, it does not merge them.
  {
    files: ['contract/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [leavesContract] }] },
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
              regex: '^\\.\\.?/(\\.\\./)*src(/|$)',
              message:
                "Workflows import the contract (contract/) and the activities' types, nothing of src/.",
            },
            {
              regex: '(^|/)activities(/|$)',
              allowTypeImports: true,
              message: 'Workflows import only the types of activities (import type).',
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
    files: ['activities/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)workflows(/|$)',
              message: 'Activities never import workflow code: what they share is in contract/.',
            },
            {
              regex:
                '^\\.\\./src/(?!provider(/|$)|webhooks/(message|secrets)$|observability/metrics$|clients/model$)',
              message:
                "Activities import the contract, the provider client (src/provider) and the webhook sender's parts only.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/worker/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)(workflows|activities)(/|$)',
              message:
                'src/ imports the contract (contract/), never workflow or activity code: only the worker assembles them.',
            },
          ],
        },
      ],
    },
  },
  {
    // The API uses the audit's masking and reveal record; the audit never needs the API (one way).
    files: ['src/audit/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)(workflows|activities)(/|$)',
              message:
                'src/ imports the contract (contract/), never workflow or activity code: only the worker assembles them.',
            },
            {
              regex: '^\\.\\./api(/|$)',
              message:
                'src/audit/ never imports src/api/: the API imports the audit, not the other way round.',
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
