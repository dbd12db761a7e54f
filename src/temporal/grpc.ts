/** Reading Temporal's gRPC errors: the status code, wherever it sits in a `cause` chain. */
import { isGrpcServiceError } from '@temporalio/client';

export const GrpcStatus = {
  CANCELLED: 1,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  UNIMPLEMENTED: 12,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

/** The gRPC status of a Temporal client error, looking through `cause` chains. */
export function grpcCode(err: unknown): number | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (isGrpcServiceError(e)) return e.code;
  }
  return undefined;
}
