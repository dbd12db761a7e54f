/**
 * src/audit/ (an order's audit trail, masking and reveal): its Node-side surface. Other folders import from here,
 * never from its files (.dependency-cruiser.cjs).
 */
export { maskCardCodes, MASKED, maskSecrets } from './mask';
export { auditOrder, type OrderAudit } from './order-audit';
export { REVEAL_SCOPE, type RevealedThrough, revealRecorder, type RevealRecorder } from './reveal';
export { auditEntryKinds } from './story';
