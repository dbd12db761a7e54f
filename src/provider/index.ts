/** The provider client's public surface: import from 'src/provider', not from its files. */
export {
  ProviderClient,
  type CallOptions,
  type ListOptions,
  type ListPage,
  type ProviderCallRecord,
  type ProviderClientOptions,
} from './client';
export { createProviderClientFromConfig, createProviderPool } from './pool';
export { DEFAULT_RETRY_AFTER_MS, parseRetryAfter } from './classify';
export { isProviderError, ProviderError, type ProviderErrorDetails } from './errors';
/** A provider call within its activity attempt (the worker's activities). */
export { attemptDeadline, markAttemptStart, withinAttempt } from './attempt-deadline';
export { toTemporalFailure } from './provider-failures';
/** The provider's wire: what the client sends and reads, and the sandbox answers. */
export {
  API_PREFIX,
  CLIENT_REFERENCE_HEADER,
  errorCodes,
  InternetSendBody,
  KeyScope,
  keyScopes,
  listLimits,
  MobileSendBody,
  OperatorName,
  operatorNames,
  operatorOfPlan,
  OperatorState,
  PlaceOrderBody,
  Ref,
  sandboxSpecialNumbers,
  sandboxTestTypes,
} from './wire';
export type {
  ApiKeyType,
  Balance,
  Catalog,
  CatalogCategory,
  CatalogProduct,
  DynamicPlan,
  FixedPlan,
  InternetProduct,
  InternetProducts,
  MobilePlans,
  NumberCheck,
  Pagination,
  Ping,
  ProductDetails,
  ProductType,
  SuggestedOffer,
  Transaction,
  GiftCard,
  GiftCardOrderCheck,
  InternetCheck,
  KeyInfo,
  MobileCheck,
  PlaceOrderResult,
  SendResult,
} from './wire';
