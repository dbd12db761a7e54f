/**
 * The lifecycle diagram in docs/contributors.md: a Mermaid stateDiagram-v2 drawn from the
 * lifecycle's table (src/orders/lifecycle/transitions.workflow.ts), between two markers.
 */
import { finalStatuses } from '../../contract/order';
import { lifecycleMoves, type LifecycleMove } from '../../src/orders/lifecycle/transitions.workflow';

export const BEGIN = '<!-- lifecycle-diagram:begin -->';
export const END = '<!-- lifecycle-diagram:end -->';

/** The fenced Mermaid block for these moves: a new order enters at ACCEPTED, a final status may end it. */
export function lifecycleDiagram(moves: readonly LifecycleMove[] = lifecycleMoves): string {
  const lines = ['stateDiagram-v2', '    [*] --> ACCEPTED'];
  for (const { from, to, by } of moves) lines.push(`    ${from} --> ${to} : ${by}`);
  for (const status of finalStatuses) lines.push(`    ${status} --> [*]`);
  return ['```mermaid', ...lines, '```'].join('\n');
}

/** `doc` with the diagram between the markers replaced by the one drawn from `moves`. */
export function withLifecycleDiagram(doc: string, moves: readonly LifecycleMove[] = lifecycleMoves): string {
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`the markers ${BEGIN} … ${END} are missing`);
  return `${doc.slice(0, begin + BEGIN.length)}\n\n${lifecycleDiagram(moves)}\n\n${doc.slice(end)}`;
}
