/**
 * `npm run client:types`: regenerates the client library's contract (clients/typescript/openapi.json,
 * exactly what the API serves at /openapi.json) and its types from it (src/schema.ts, by
 * openapi-typescript, the client package's own devDependency). `--check` (CI) writes nothing and
 * fails when either file differs from what the API's zod schemas give now: a route or schema
 * changed without the client's types following it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { openApiDocument } from '../src/api/openapi';

const clientDir = resolve(__dirname, '..', 'clients', 'typescript');
const specPath = join(clientDir, 'openapi.json');
const schemaPath = join(clientDir, 'src', 'schema.ts');

function generate(into: string): { spec: string; schema: string } {
  const spec = `${JSON.stringify(openApiDocument(), null, 2)}\n`;
  const specFile = join(into, 'openapi.json');
  const schemaFile = join(into, 'schema.ts');
  writeFileSync(specFile, spec);
  // The client package's own openapi-typescript (npm ci in clients/typescript), so the types are
  // made by the same generator version whoever runs this.
  const cli = join(clientDir, 'node_modules', 'openapi-typescript', 'bin', 'cli.js');
  execFileSync(process.execPath, [cli, specFile, '--output', schemaFile], { stdio: 'pipe' });
  return { spec, schema: readFileSync(schemaFile, 'utf8') };
}

function main(): number {
  const check = process.argv.includes('--check');
  const scratch = mkdtempSync(join(tmpdir(), 'client-types-'));
  try {
    const fresh = generate(scratch);
    if (!check) {
      writeFileSync(specPath, fresh.spec);
      writeFileSync(schemaPath, fresh.schema);
      console.log(`wrote ${specPath} and ${schemaPath}`);
      return 0;
    }
    const stale = [
      [specPath, fresh.spec],
      [schemaPath, fresh.schema],
    ].filter(([path, text]) => readFileSync(path!, 'utf8') !== text);
    for (const [path] of stale) console.error(`stale: ${path}`);
    if (stale.length > 0) {
      console.error('The API contract changed: run `npm run client:types` and commit the result.');
      return 1;
    }
    console.log('client types are current');
    return 0;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

process.exit(main());
