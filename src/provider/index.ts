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
export type {
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
  Ping,
  ProductDetails,
  ProductType,
  Transaction,
  GiftCard,
  GiftCardOrderCheck,
  InternetCheck,
  InternetSendBody,
  KeyInfo,
  MobileCheck,
  MobileSendBody,
  PlaceOrderBody,
  PlaceOrderResult,
  SendResult,
} from './wire';
