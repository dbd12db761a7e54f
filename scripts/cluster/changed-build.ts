/**
 * The "changed build" (v2) of the cluster tier's rainbow deploy (rainbow-deploy.ts): a workflow
 * interceptor bundled with the order workflows into a second bundle. It changes what every order
 * run does — its first workflow task upserts a memo, a command the first build never issues — and
 * it is not guarded by `patched()`: orders are pinned to the version that started them, so this
 * build only ever runs histories it wrote, and the first build would fail to replay one of them.
 * The bundle differs, so its build ID (a digest of the bundle) differs: a second version of the
 * deployment.
 *
 * Workflow code: it runs in the workflow sandbox and is deterministic.
 */
import {
  upsertMemo,
  workflowInfo,
  type Next,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptors,
} from '@temporalio/workflow';
import { workflowTypeByOrderType } from '../../contract/order';

const orderWorkflowTypes: ReadonlySet<string> = new Set(Object.values(workflowTypeByOrderType));

/** The memo key each order run of the changed build sets: the change Temporal UI shows. */
export const CHANGED_BUILD_MEMO = 'changedBuild';

class MarkRun implements WorkflowInboundCallsInterceptor {
  execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>) {
    // Before the workflow's own code, so the command lands in the run's first workflow task.
    if (orderWorkflowTypes.has(workflowInfo().workflowType)) upsertMemo({ [CHANGED_BUILD_MEMO]: true });
    return next(input);
  }
}

export const interceptors = (): WorkflowInterceptors => ({ inbound: [new MarkRun()] });
