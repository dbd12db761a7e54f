/**
 * The lifecycle's table (src/orders/lifecycle/transitions.workflow.ts): Order.transition() refuses a
 * move that is not in it, every recorded history moves only along it, and the diagram in
 * docs/contributors.md is the one `npm run docs:lifecycle` draws from it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { finalStatuses, type OrderStatus, type OrderView } from '../../contract/order';
import { orderStatuses } from '../../contract/schemas';
import {
  assertLegalMove,
  isLegalMove,
  lifecycleMoves,
} from '../../src/orders/lifecycle/transitions.workflow';
import { BEGIN, END, lifecycleDiagram, withLifecycleDiagram } from '../../scripts/lib/lifecycle-diagram';
import { historiesDir } from '../helpers/histories';

const root = join(__dirname, '..', '..');
const docPath = join(root, 'docs', 'contributors.md');

describe("the lifecycle's table", () => {
  it('refuses a move that is not in it with a plain Error, so the workflow task fails and is retried', () => {
    for (const [from, to] of [
      ['FULFILLED', 'SUBMITTED'],
      ['FAILED', 'CANCELLED'],
      ['SUBMITTED', 'FAILED'],
      ['SUBMITTED', 'CANCELLED'],
      ['NEEDS_REVIEW', 'DISPUTED'],
      ['DISPUTED', 'NEEDS_REVIEW'],
      ['SUBMITTED', 'ACCEPTED'],
      ['ACCEPTED', 'PROCESSING'],
    ] as const) {
      assert.equal(isLegalMove(from, to), false, `${from} → ${to}`);
      assert.throws(
        () => assertLegalMove(from, to),
        (err: unknown) =>
          err instanceof Error &&
          !(err instanceof ApplicationFailure) &&
          err.message.startsWith(`illegal move ${from} → ${to}`),
      );
    }
  });

  it('admits the moves the lifecycle makes', () => {
    for (const [from, to] of [
      ['ACCEPTED', 'SUBMITTED'],
      ['HELD', 'CANCELLED'],
      ['SUBMITTED', 'QUEUED'],
      ['PROCESSING', 'NEEDS_REVIEW'],
      ['NEEDS_REVIEW', 'REFUNDED'],
      ['REFUNDED', 'DISPUTED'],
      ['DISPUTED', 'PARTIALLY_FULFILLED'],
    ] as const) {
      assert.doesNotThrow(() => assertLegalMove(from, to), `${from} → ${to}`);
    }
  });

  it('has no move to the status the order already has, none back to ACCEPTED, and leaves a final status only for DISPUTED', () => {
    for (const status of orderStatuses) assert.equal(isLegalMove(status, status), false, status);
    assert.ok(!lifecycleMoves.some((m) => m.to === 'ACCEPTED'));
    for (const m of lifecycleMoves.filter((m) => finalStatuses.includes(m.from)))
      assert.equal(m.to, 'DISPUTED', `${m.from} → ${m.to}`);
    const keys = lifecycleMoves.map((m) => `${m.from}>${m.to}`);
    assert.equal(new Set(keys).size, keys.length, 'each move once');
  });

  it('reaches every status from ACCEPTED', () => {
    const reached = new Set<OrderStatus>(['ACCEPTED']);
    for (let grew = true; grew;) {
      grew = false;
      for (const { from, to } of lifecycleMoves)
        if (reached.has(from) && !reached.has(to)) grew = Boolean(reached.add(to));
    }
    assert.deepEqual([...reached].sort(), [...orderStatuses].sort());
  });

  it('admits every status sequence of the recorded histories (each run from the view it starts with)', () => {
    let checked = 0;
    for (const file of readdirSync(historiesDir).filter((f) => f.endsWith('.json'))) {
      const { events } = JSON.parse(readFileSync(join(historiesDir, file), 'utf8')) as {
        events: Record<string, { result?: Payloads; input?: Payloads } | undefined>[];
      };
      for (const event of events) {
        for (const key of [
          'workflowExecutionCompletedEventAttributes',
          'workflowExecutionContinuedAsNewEventAttributes',
        ]) {
          for (const view of viewsIn(event[key])) {
            const statuses = view.timeline.map((t) => t.status);
            for (let i = 1; i < statuses.length; i++) {
              const [from, to] = [statuses[i - 1]!, statuses[i]!];
              if (from !== to) assert.ok(isLegalMove(from, to), `${file}: ${from} → ${to}`);
              checked++;
            }
          }
        }
      }
    }
    assert.ok(checked > 100, `only ${checked} timeline steps read`);
  });
});

describe('docs/contributors.md: the lifecycle diagram', () => {
  it('is the one npm run docs:lifecycle draws from the table', () => {
    const doc = readFileSync(docPath, 'utf8');
    assert.ok(doc.includes(BEGIN) && doc.includes(END), 'the markers are there');
    assert.ok(doc.includes(lifecycleDiagram()), 'the diagram is there');
    assert.equal(doc, withLifecycleDiagram(doc));
  });

  it('a table changed without the diagram, or the diagram edited by hand, is caught', () => {
    const doc = readFileSync(docPath, 'utf8');
    const fewer = lifecycleMoves.filter((m) => !(m.from === 'QUEUED' && m.to === 'FULFILLED'));
    assert.notEqual(doc, withLifecycleDiagram(doc, fewer));
    const edited = doc.replace('ACCEPTED --> HELD', 'ACCEPTED --> QUEUED');
    assert.notEqual(edited, doc);
    assert.notEqual(edited, withLifecycleDiagram(edited));
  });
});

interface Payloads {
  payloads?: { data?: string }[];
}

/** The order views a completed or continued run hands on (its result, or its next run's input). */
function viewsIn(attributes: { result?: Payloads; input?: Payloads } | undefined): OrderView[] {
  const views: OrderView[] = [];
  for (const payload of (attributes?.result ?? attributes?.input)?.payloads ?? []) {
    if (!payload.data) continue;
    const value = JSON.parse(Buffer.from(payload.data, 'base64').toString('utf8')) as unknown;
    const view = isView(value)
      ? value
      : isView((value as { continued?: { view?: unknown } })?.continued?.view)
        ? (value as { continued: { view: OrderView } }).continued.view
        : undefined;
    if (view) views.push(view);
  }
  return views;
}

function isView(value: unknown): value is OrderView {
  return typeof value === 'object' && value !== null && Array.isArray((value as OrderView).timeline);
}
