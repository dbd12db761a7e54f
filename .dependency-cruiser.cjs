/**
 * Import rules of the layout (docs/contributors.md "Layout"), checked by `npm run lint`
 * (`lint:deps`; the folder-level cycle check is scripts/lint/folder-cycles.ts over the same graph).
 * Type-only imports count: a cycle or a crossing through types is a crossing all the same.
 *
 * The folders: `contract/` (the shared base), `src/<area>/` (orders, reviews, webhooks,
 * statements, reconciliation, provider-account, clients, provider, sandbox, audit) and the
 * platform folders `src/<folder>/` (api, http, temporal, worker, codec, observability). Workflow
 * code: `*.workflow.ts`, a folder's `workflows.ts` surface, and the bundle's entry
 * (src/worker/workflows.ts).
 */
const workflowCode = '(\\.workflow\\.ts|^src/[^/]+/workflows\\.ts)$';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'No import cycles between the modules of the product, types included (the folder-level check is ' +
        'scripts/lint/folder-cycles.ts).',
      from: { path: '^(contract|src)/' },
      to: { circular: true },
    },
    {
      name: 'no-circular-at-run-time',
      severity: 'error',
      comment:
        'Tests and scripts: no cycle of run-time imports (a cycle through types only is allowed there).',
      from: { path: '^(test|scripts|clients)/' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'contract-imports-nothing-of-ours',
      severity: 'error',
      comment: 'contract/ is the shared base: it imports libraries only, everything else imports it.',
      from: { path: '^contract/' },
      to: { path: '^(src|test|scripts|clients)/' },
    },
    {
      name: 'product-not-tests-or-scripts',
      severity: 'error',
      comment:
        'src/ (the shipped product) imports nothing from test/ or scripts/; scripts import nothing from test/.',
      from: { path: '^(src|scripts)/' },
      to: { path: '^test/' },
    },
    {
      name: 'src-not-scripts',
      severity: 'error',
      comment: 'src/ (the shipped product) imports nothing from scripts/.',
      from: { path: '^src/' },
      to: { path: '^scripts/' },
    },
    {
      name: 'cross-folder-through-surface',
      severity: 'error',
      comment:
        "One folder of src/ uses another only through that folder's index.ts (Node side) or workflows.ts " +
        '(the workflow-safe surface): never its files.',
      from: { path: '^src/([^/]+)/' },
      to: {
        path: '^src/[^/]+/',
        pathNot: ['^src/$1/', '^src/[^/]+/(index|workflows)\\.ts$'],
      },
    },
    {
      name: 'workflow-code-through-workflows-surface',
      severity: 'error',
      comment:
        'Workflow code uses another folder through its workflows.ts (workflow-safe), never its index.ts ' +
        '(the Node side: I/O, clients, servers).',
      from: { path: workflowCode },
      to: { path: '^src/[^/]+/index\\.ts$' },
    },
    {
      name: 'workflow-code-is-workflow-safe',
      severity: 'error',
      comment:
        'Workflows are replayed and must stay deterministic: workflow code imports other workflow code, ' +
        "contract/, @temporalio/workflow and @temporalio/common, and activities' types only (import type). " +
        'I/O belongs in activities.',
      from: { path: workflowCode },
      to: {
        pathNot: [
          workflowCode,
          '^contract/',
          '(^|/)node_modules/@temporalio/(workflow|common)/',
          // OpenTelemetry is required lazily, for traced orders only (src/worker/interceptors.workflow.ts).
          '(^|/)node_modules/@temporalio/interceptors-opentelemetry/lib/workflow/',
        ],
        dependencyTypesNot: ['type-only'],
      },
    },
    {
      name: 'workflow-code-imports-activities-as-types',
      severity: 'error',
      comment: 'Workflow code imports only the types of activities (import type).',
      from: { path: workflowCode },
      to: { path: '\\.activities\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that resolves to nothing.',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|clients/typescript/(dist|node_modules))/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json', '.d.ts'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    skipAnalysisNotInRules: true,
  },
};
