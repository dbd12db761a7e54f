/**
 * src/codec/ (the payload codec): its Node-side surface. Other folders import from here,
 * never from its files (.dependency-cruiser.cjs).
 */
export { dataConverterFromConfig, failureConverterPath } from './data-converter';
export { type EncryptionKeys, parseEncryptionKeys } from './encryption-codec';
