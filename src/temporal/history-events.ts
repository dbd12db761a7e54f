/** What a workflow history's events say about their run, for readers of raw histories. */
import type { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const closingAttributes = [
  'workflowExecutionCompletedEventAttributes',
  'workflowExecutionFailedEventAttributes',
  'workflowExecutionTimedOutEventAttributes',
  'workflowExecutionTerminatedEventAttributes',
  'workflowExecutionCanceledEventAttributes',
  'workflowExecutionContinuedAsNewEventAttributes',
] as const;

/** Whether an event is the last of its run: the run completed, failed, timed out, was ended or continued as new. */
export function closesRun(event: HistoryEvent): boolean {
  return closingAttributes.some((key) => event[key]);
}
