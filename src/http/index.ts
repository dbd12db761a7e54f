/**
 * src/http/ (the building blocks of every area's routes and services: errors, auth, validation, request work, read cache, the API's schemas): its Node-side surface. Other folders import from here,
 * never from its files (.dependency-cruiser.cjs).
 */
export { assertScope, callerOf, identifyCaller, requireApiKey, requireScope } from './auth';
export {
  errorHandler,
  isTemporalUnavailable,
  methodNotAllowedHandler,
  notFoundHandler,
  PROBLEM_CONTENT_TYPE,
  sendProblem,
  temporarilyUnavailable,
  toApiError,
} from './error-handler';
export { ApiError, type FieldError, type Problem, type ProblemKey, problemKinds } from './errors';
export { jsonBody } from './json-body';
export { ReadCache, readKey } from './read-cache';
export { afterRequestWork, signalOf, trackedRouter, trackRequestWork } from './request-work';
export {
  AuditQuery,
  checkRange,
  Health,
  ListOrdersQuery,
  MAX_RANGE_DAYS,
  OrderAddressQuery,
  OrderAudit,
  OrderList,
  OrderView,
  OrderViewQuery,
  OrderViewWithDeliveries,
  OrderWebhookDeliveries,
  ProblemSchema,
  RangeBound,
  Readiness,
  RedeliverParams,
  RedeliverQuery,
  RedeliveryAccepted,
  RefParams,
  WebhookEndpointList,
  workflowStatuses,
} from './schemas';
export { validateRequest } from './validation';
