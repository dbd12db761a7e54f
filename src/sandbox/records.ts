/**
 * What the sandbox keeps of each committed send: the top-ups (mobile, internet) and gift-card
 * orders, as the store holds them (state.ts) and the answers render them (answers.ts).
 */
import type { InternetSendBody, PlaceOrderBody } from '../provider';
import type { Timeline } from './simulation';

export type Family = 'mobile' | 'internet';

/** A mobile top-up as committed: the ref resolved, the amount credited (a fixed plan's own). */
export interface MobileTopup {
  plan_code: string;
  MSSIDN: string;
  amount: number;
  ref: string;
}
export type InternetTopup = InternetSendBody & { ref: string };

export interface Created<B> {
  id: string;
  owner: string;
  /** When it was committed: the start of its status timeline. */
  createdAt: number;
  body: B;
  /** What the send debited (balance_amount before any refund). */
  debit: number;
  /** Sent while /v3/ping reported its operator down: accepted, then REFUNDED (docs/contributors.md). */
  operatorDown?: boolean;
  /** Drawn from the documented ranges (SandboxSettings.timings); absent: the spec's timeline. */
  timeline?: Timeline;
}

export interface GiftCardOrder extends Created<PlaceOrderBody> {
  pricePerCard: number;
  /** What the placement's X-Client-Reference header said (wire.ts CLIENT_REFERENCE_HEADER), if anything. */
  clientRef?: string;
}
