/**
 * The order's continue-as-new input is a contract between worker versions (contract/continued.ts):
 * every input a version before this one wrote must parse under this version's schema, or an order
 * that moves onto this version by continue-as-new fails there.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { z } from 'zod';
import { ContinuedOrderInputSchema } from '../../contract/continued';
import type { OrderContinuation, OrderInput } from '../../contract/order';

const fixtures = join(__dirname, '..', 'fixtures', 'continued-inputs');
const files = readdirSync(fixtures).filter((f) => f.endsWith('.json'));

// What the workflow writes (its TypeScript type) is what the schema accepts: change one without the other and this stops compiling.
type Written = Omit<OrderInput, 'resumed' | 'reconciled' | 'continued'> & { continued: OrderContinuation };
const _writtenIsAccepted = (input: Written): z.input<typeof ContinuedOrderInputSchema> => input;
void _writtenIsAccepted;

describe('continued order inputs (the data contract between worker versions)', () => {
  it('has inputs recorded by earlier versions to check', () => {
    assert.ok(files.length >= 3, `only ${files.length} fixtures in ${fixtures}`);
  });

  for (const file of files) {
    it(`the input recorded in ${file} parses under this version's schema`, () => {
      const input: unknown = JSON.parse(readFileSync(join(fixtures, file), 'utf8'));
      const parsed = ContinuedOrderInputSchema.safeParse(input);
      assert.ok(parsed.success, parsed.success ? '' : JSON.stringify(parsed.error.issues, null, 2));
    });
  }

  it('a version that requires what earlier inputs lack fails on them', () => {
    const stricter = ContinuedOrderInputSchema.extend({
      continued: ContinuedOrderInputSchema.shape.continued.required({ eventSequence: true }),
    });
    const failing = files.filter((file) => {
      const input: unknown = JSON.parse(readFileSync(join(fixtures, file), 'utf8'));
      return !stricter.safeParse(input).success;
    });
    assert.ok(failing.length > 0, 'no recorded input lacks eventSequence: the check would not bite');
  });
});
