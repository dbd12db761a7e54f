/**
 * The DataConverter that the Client (API, scripts) and the Worker share. Both sides must use the same
 * one: whatever encrypts has to be able to decrypt, and the other side must read what it wrote.
 */
import type { DataConverter } from '@temporalio/common';
import type { Config } from '../config';
import { createEncryptionCodecFromConfig } from './encryption-codec';

/**
 * For `bundleWorkflowCode({ workflowsPath, failureConverterPath })`: a pre-built workflow bundle
 * ignores the Worker's dataConverter.failureConverterPath, so it must be built with this path, or
 * failures raised inside workflows keep their messages in clear.
 */
export const failureConverterPath: string = require.resolve('./failure-converter');

/** Encryption when PAYLOAD_ENCRYPTION_KEYS is set; otherwise Temporal's defaults (`{}`). */
export function dataConverterFromConfig(config: Pick<Config, 'PAYLOAD_ENCRYPTION_KEYS'>): DataConverter {
  const codec = createEncryptionCodecFromConfig(config);
  return codec ? { payloadCodecs: [codec], failureConverterPath } : {};
}
