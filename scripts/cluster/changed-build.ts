/**
 * The "changed build" of the cluster tier's rolling deploy (rolling-deploy.ts): a workflow
 * interceptor bundled with the order workflows into a second bundle. It changes what the order
 * workflow does — a memo update, a command — the way docs/contributors.md "Changing a workflow
 * safely" says a change is made: guarded by `patched()`, so a history the old build wrote replays
 * on it unchanged, and each order this build drives past that point says so in its memo.
 *
 * Workflow code: it runs in the workflow sandbox and is deterministic.
 */
import {
  patched,
  upsertMemo,
  workflowInfo,
  type ActivityInput,
  type Next,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptors,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { workflowTypeByOrderType } from '../../contract/order';

const orderWorkflowTypes: ReadonlySet<string> = new Set(Object.values(workflowTypeByOrderType));

/** The patch ID, and the memo key that shows which orders the changed build drove. */
export const CHANGED_BUILD_PATCH = 'cluster-rolling-deploy-memo';
export const CHANGED_BUILD_MEMO = 'changedBuild';

/** The change itself: once per run, where the new build takes the order on. */
function markChangedBuild(): void {
  if (!patched(CHANGED_BUILD_PATCH)) return;
  if (workflowInfo().memo?.[CHANGED_BUILD_MEMO] !== undefined) return;
  upsertMemo({ [CHANGED_BUILD_MEMO]: true });
}

class MarkOnExecute implements WorkflowInboundCallsInterceptor {
  async execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>) {
    const result = await next(input);
    if (orderWorkflowTypes.has(workflowInfo().workflowType)) markChangedBuild();
    return result;
  }
}

class MarkOnActivity implements WorkflowOutboundCallsInterceptor {
  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
    markChangedBuild();
    return next(input);
  }
}

export const interceptors = (): WorkflowInterceptors => ({
  inbound: [new MarkOnExecute()],
  outbound: [new MarkOnActivity()],
});
