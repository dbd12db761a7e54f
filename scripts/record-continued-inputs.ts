/**
 * Writes test/fixtures/continued-inputs/: the continue-as-new inputs the current worker version
 * writes (an order's `OrderInput` with `continued`), taken from the recorded histories of
 * test/fixtures/histories/ (those of the current code: not `-lifecycle-1`). They are the data
 * contract a next version must read (contract/continued.ts, test/contract/continued.test.ts).
 * Fixtures already there are kept: they are what earlier versions wrote. `--overwrite` rewrites them.
 *
 *   npx tsx scripts/record-continued-inputs.ts
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

const histories = join(__dirname, '..', 'test', 'fixtures', 'histories');
const out = join(__dirname, '..', 'test', 'fixtures', 'continued-inputs');
const overwrite = process.argv.includes('--overwrite');
const orderTypes = ['mobileTopupWorkflow', 'internetTopupWorkflow', 'giftCardWorkflow'];

interface JsonPayload {
  metadata?: { encoding?: string };
  data?: string;
}
interface JsonEvent {
  workflowExecutionContinuedAsNewEventAttributes?: {
    workflowType?: { name?: string };
    input?: { payloads?: JsonPayload[] };
  };
}

let written = 0;
for (const file of readdirSync(histories).filter((f) => f.endsWith('.json') && !f.includes('lifecycle-1'))) {
  const { events } = JSON.parse(readFileSync(join(histories, file), 'utf8')) as { events: JsonEvent[] };
  for (const event of events) {
    const continued = event.workflowExecutionContinuedAsNewEventAttributes;
    if (!continued || !orderTypes.includes(continued.workflowType?.name ?? '')) continue;
    const first = continued.input?.payloads?.[0];
    if (Buffer.from(first?.metadata?.encoding ?? '', 'base64').toString() !== 'json/plain' || !first?.data) {
      throw new Error(`${file}: the continue-as-new input is not plain JSON (encrypted?)`);
    }
    const target = join(out, `${basename(file, '.json')}.json`);
    if (existsSync(target) && !overwrite) continue;
    const input: unknown = JSON.parse(Buffer.from(first.data, 'base64').toString('utf8'));
    writeFileSync(target, `${JSON.stringify(input, null, 2)}\n`);
    written++;
  }
}
console.log(`${written} continued input(s) written to ${out}`);
