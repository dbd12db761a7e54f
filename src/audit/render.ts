/** An order's audit story as text for a person (`npm run audit`): one line per entry, oldest first. */
import type { OrderAudit } from './order-audit';
import type { AuditEntry, AuditFailure } from './story';

const MAX_VALUE_CHARS = 240;

function compact(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (text === undefined) return '';
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS)}…` : text;
}

function failureText(failure: AuditFailure | undefined): string {
  if (!failure) return 'failed';
  const codes = failure.details?.[0] as { status?: unknown; code?: unknown } | undefined;
  const extra =
    codes && (codes.status || codes.code) ? ` [${[codes.status, codes.code].filter(Boolean).join(' ')}]` : '';
  const timeout = failure.timeoutType ? ` (${failure.timeoutType} timeout)` : '';
  return `${failure.type}: ${failure.message}${timeout}${extra}`;
}

/** An update's answer: a decision's outcome (refused: why; applied unconfirmed: watched until), or its result. */
function answerText(e: Record<string, unknown>): string {
  if (typeof e.decisionOutcome !== 'string') return `${String(e.outcome)} ${compact(e.result)}`;
  const refusal = e.refusal as
    { kind?: unknown; reason?: unknown; provider?: { answer?: unknown } } | undefined;
  if (refusal) {
    const said = refusal.provider?.answer ? ` (${String(refusal.provider.answer)})` : '';
    return `refused, ${String(refusal.kind)}: ${String(refusal.reason)}${said}`;
  }
  return e.watchUntil ? `${e.decisionOutcome}, watched until ${String(e.watchUntil)}` : e.decisionOutcome;
}

function describe(entry: AuditEntry): string {
  const e = entry as Record<string, unknown>;
  switch (entry.kind) {
    case 'run_started':
      return [
        `${String(e.workflowType)}${e.continuedFromRunId ? ` continuing ${String(e.continuedFromRunId)}` : ''}`,
        e.identity ? `started by ${String(e.identity)}` : '',
        `input ${compact(e.input)}`,
      ]
        .filter(Boolean)
        .join(' · ');
    case 'status': {
      const change = e.previous ? `${String(e.previous)} → ${String(e.status)}` : String(e.status);
      return e.providerStatus ? `${change} (the provider now reports ${String(e.providerStatus)})` : change;
    }
    case 'search_attributes':
      return compact(e.changes);
    case 'activity': {
      const outcome =
        e.outcome === 'completed'
          ? ((e.providerStatus as string | undefined) ?? `completed ${compact(e.result)}`)
          : e.outcome === 'pending'
            ? 'pending'
            : `${String(e.outcome)}: ${failureText(e.failure as AuditFailure | undefined)}`;
      return [
        `${e.local ? 'local ' : ''}${String(e.activityType)} → ${outcome}`,
        e.repeats ? `×${Number(e.repeats) + 1} until ${String(e.lastAt)}` : '',
        e.attempt && Number(e.attempt) > 1 ? `attempt ${String(e.attempt)}` : '',
        e.durationMs !== undefined ? `${Math.round(Number(e.durationMs))} ms` : '',
        e.worker ? `worker ${String(e.worker)}` : '',
        e.summary ? `“${String(e.summary)}”` : '',
      ]
        .filter(Boolean)
        .join(' · ');
    }
    case 'signal':
    case 'update': {
      const decision = e.decision as Record<string, unknown> | undefined;
      const what = decision
        ? `${String(decision.decision)}${decision.force ? ' (forced)' : ''} by ${String(decision.operator ?? '?')}${decision.decidedBy ? ` (client ${String(decision.decidedBy)})` : ''}${decision.note ? ` “${String(decision.note)}”` : ''}`
        : compact(e.input);
      const outcome =
        entry.kind === 'update' && e.outcome !== 'pending'
          ? ` → ${e.outcome === 'failed' ? failureText(e.failure as AuditFailure) : answerText(e)}`
          : '';
      return `${String(e.name)}: ${what}${outcome}${e.identity ? ` · sent by ${String(e.identity)}` : ''}`;
    }
    case 'timer':
      return `${Math.round(Number(e.durationMs ?? 0))} ms, ${String(e.outcome)}${e.summary ? ` “${String(e.summary)}”` : ''}`;
    case 'marker':
      return e.patchId ? `patch ${String(e.patchId)}` : `${String(e.name)} ${compact(e.details)}`;
    case 'workflow_task_failed':
      return `${String(e.cause)}: ${failureText(e.failure as AuditFailure | undefined)}`;
    case 'continued_as_new':
      return `next run ${String(e.newRunId)}`;
    case 'closed':
      return e.outcome === 'completed'
        ? `completed${e.status ? `: ${String(e.status)}` : ''}`
        : `${String(e.outcome)}${e.failure ? `: ${failureText(e.failure as AuditFailure)}` : ''}${e.reason ? `: ${String(e.reason)}` : ''}${e.identity ? ` by ${String(e.identity)}` : ''}`;
    case 'other':
      return String(e.eventType);
  }
}

export function renderAudit(audit: OrderAudit): string {
  const lines = [
    `Order ${audit.ref} · client ${audit.client}${audit.type ? ` · ${audit.type}` : ''}${audit.status ? ` · now ${audit.status}` : ''}`,
    `Workflow ${audit.workflowId} · ${audit.runs.length} run${audit.runs.length === 1 ? '' : 's'}${audit.temporalUiUrl ? ` · ${audit.temporalUiUrl}` : ''}`,
    audit.secrets === 'masked'
      ? 'Phone and line numbers, card codes and digit runs in notes and the provider’s text masked (--reveal shows them).'
      : 'Secrets shown.',
  ];
  let run = 0;
  for (const entry of audit.entries) {
    if (entry.run !== run) {
      run = entry.run;
      lines.push('', `run ${run}  ${audit.runs[run - 1]?.runId ?? ''}`);
    }
    lines.push(`  ${entry.at}  ${entry.kind.padEnd(20)}  ${describe(entry)}`);
  }
  return lines.join('\n');
}
