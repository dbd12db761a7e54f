/**
 * `npm run test:schemathesis [-- extra schemathesis flags]`: schemathesis, generated from the
 * intake API's own /openapi.json, against a real stack on free loopback ports (Temporal dev server,
 * sandbox, one worker, the API — the chaos stack, without its chaos). Checks that no request gets
 * a 5xx and that every answer matches the documented status codes, content types and schemas.
 *
 * Schemathesis comes from PyPI, pinned, in the project's own venv (.tools/venv, git-ignored);
 * the first run creates it. Bounded: a fixed number of examples per operation and a fixed seed
 * (SCHEMATHESIS_MAX_EXAMPLES, SCHEMATHESIS_SEED). Exits with schemathesis' exit code.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { OrderRequest, OrderStatus } from '../contract/schemas';
import { sandboxSpecialNumbers } from '../src/provider/wire';
import { IntakeClient } from './chaos/intake';
import { buildWorkflowBundle, CHAOS_API_KEY, ChaosStack } from './chaos/stack';
import { projectRoot } from './lib/processes';

const SCHEMATHESIS_VERSION = '4.32.5';
const venv = join(projectRoot, '.tools', 'venv');
const schemathesisBin = join(venv, 'bin', 'schemathesis');

/**
 * The checks that hold. Every one schemathesis offers for responses is on; the ones that judge
 * the *request* side (negative_data_rejection, positive_data_acceptance, …) are left to
 * test/api/fuzz.test.ts, which knows which bodies are valid.
 */
const CHECKS = [
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_headers_conformance',
  'response_schema_conformance',
];

function installedVersion(): string | undefined {
  if (!existsSync(schemathesisBin)) return undefined;
  const result = spawnSync(schemathesisBin, ['--version'], { encoding: 'utf8' });
  return /version (\S+)/.exec(result.stdout)?.[1];
}

/** Creates .tools/venv with the pinned schemathesis unless it is already there. */
function ensureSchemathesis(): void {
  if (installedVersion() === SCHEMATHESIS_VERSION) return;
  console.error(`[schemathesis] installing schemathesis==${SCHEMATHESIS_VERSION} into ${venv}`);
  const python = process.env.PYTHON ?? 'python3';
  const steps: [string, string[]][] = [
    [python, ['-m', 'venv', venv]],
    [
      join(venv, 'bin', 'pip'),
      ['install', '--quiet', '--disable-pip-version-check', `schemathesis==${SCHEMATHESIS_VERSION}`],
    ],
  ];
  for (const [command, args] of steps) {
    const result = spawnSync(command, args, { stdio: 'inherit' });
    if (result.status !== 0)
      throw new Error(`${command} ${args.join(' ')} failed (${result.status ?? result.signal})`);
  }
}

/** Submits an order and waits (bounded) until it reaches `status`, so the run can use its ref. */
async function orderIn(intake: IntakeClient, request: OrderRequest, status: OrderStatus): Promise<string> {
  const submitted = await intake.submit(request);
  if (submitted.status !== 201) throw new Error(`seeding ${request.ref}: HTTP ${submitted.status}`);
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(250)) {
    const answer = await intake.order(request.ref);
    if ((answer.body as { status?: string }).status === status) return request.ref;
  }
  throw new Error(`seeding ${request.ref}: not ${status} within 60 s`);
}

/**
 * Random refs only ever find nothing (404). Real orders let schemathesis reach the order view (and
 * check it against the documented OrderView), its audit (against OrderAudit) and a review decision
 * on an order that is in review.
 */
async function writeConfig(dir: string, apiUrl: string): Promise<string> {
  const intake = new IntakeClient(apiUrl, CHAOS_API_KEY, AbortSignal.timeout(120_000));
  const mobile = { type: 'mobile_topup', planCode: 'PREPAID_DJEZZY', amount: 500 } as const;
  const [fulfilled, inReview] = await Promise.all([
    orderIn(intake, { ...mobile, ref: 'st-fulfilled', msisdn: '0551234567' }, 'FULFILLED'),
    orderIn(
      intake,
      { ...mobile, ref: 'st-review', msisdn: sandboxSpecialNumbers.unknownError },
      'NEEDS_REVIEW',
    ),
  ]);
  const file = join(dir, 'schemathesis.toml');
  writeFileSync(
    file,
    [
      '[[operations]]',
      'include-operation-id = "getOrder"',
      `parameters = { ref = "${fulfilled}" }`,
      '',
      '[[operations]]',
      'include-operation-id = "reviewOrder"',
      `parameters = { ref = "${inReview}" }`,
      '',
      '[[operations]]',
      'include-operation-id = "getOrderWebhooks"',
      `parameters = { ref = "${fulfilled}" }`,
      '',
      '[[operations]]',
      'include-operation-id = "getOrderAudit"',
      `parameters = { ref = "${fulfilled}" }`,
      '',
    ].join('\n'),
  );
  return file;
}

/** Runs in `cwd`: schemathesis keeps a cache (.schemathesis/) in its working directory, not in the repo. */
function runSchemathesis(args: string[], cwd: string): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(schemathesisBin, args, {
      cwd,
      stdio: 'inherit',
      env: { ...process.env, NO_COLOR: '1' },
    });
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.once('SIGINT', forward).once('SIGTERM', forward);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 130 : 1)));
  });
}

async function main(): Promise<number> {
  ensureSchemathesis();
  const dir = mkdtempSync(join(tmpdir(), 'topup-schemathesis-'));
  const log = (line: string) => console.error(`[schemathesis] ${line}`);
  const stack = new ChaosStack({
    dir,
    timeScale: 0.01,
    workflowBundlePath: await buildWorkflowBundle(dir),
    // Encrypted payloads, as in production: the API decrypts every view it answers with.
    encrypt: true,
    log,
  });
  let code = 1;
  try {
    await stack.start(1);
    const config = await writeConfig(dir, stack.apiUrl);
    const args = [
      '--config-file',
      config,
      'run',
      `${stack.apiUrl}/openapi.json`,
      '--checks',
      CHECKS.join(','),
      '--header',
      `Authorization: Bearer ${CHAOS_API_KEY}`,
      '--max-examples',
      process.env.SCHEMATHESIS_MAX_EXAMPLES ?? '50',
      '--seed',
      process.env.SCHEMATHESIS_SEED ?? '20251121',
      '--phases',
      'examples,coverage,fuzzing',
      // One worker: hypothesis describes its strategies with ast.parse, which is not thread-safe on
      // CPython 3.11 ("AST constructor recursion depth mismatch" under --workers 2).
      '--workers',
      '1',
      '--request-timeout',
      '30',
      '--report',
      'junit,ndjson',
      '--report-dir',
      join(dir, 'report'),
      ...process.argv.slice(2),
    ];
    log(`schemathesis ${args.join(' ')}`);
    code = await runSchemathesis(args, dir);
    return code;
  } finally {
    await stack.stop();
    if (code === 0) rmSync(dir, { recursive: true, force: true });
    else log(`logs and report kept in ${dir}`);
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
