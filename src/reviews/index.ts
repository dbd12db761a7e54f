/**
 * src/reviews/ (bulk review decisions): its Node-side surface. Other folders import from here,
 * never from its files (.dependency-cruiser.cjs).
 */
export { createBulkReviewActivities } from './bulk-review.activities';
export { reviewsRouter } from './bulk-review.routes';
export {
  BULK_REVIEW_CONCURRENCY,
  BULK_REVIEW_MAX_ORDERS,
  BulkReviewAnswer,
  BulkReviewRequest,
  BulkReviewService,
} from './bulk-review.service';
