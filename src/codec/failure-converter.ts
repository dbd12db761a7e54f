/**
 * The failure converter for encrypted deployments, loaded by path (DataConverter.failureConverterPath)
 * because the Worker bundles it into the workflow sandbox as well.
 *
 * By default Temporal stores an error's message and stack trace as plain text in the Failure proto,
 * outside any payload, so the codec never sees them, and a provider refusal that quotes a card code
 * or a phone number would land in the history in clear. With `encodeCommonAttributes` they move into
 * `Failure.encodedAttributes`, a payload that the codec encrypts; the Failure's own message becomes
 * "Encoded failure".
 */
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
