import { status as GrpcStatus } from '@grpc/grpc-js';
import { ServiceError } from '../lib/errors';

const codeOf = (value: unknown): unknown => (value as { code?: unknown } | undefined)?.code;

/**
 * The gRPC status code of a failed call: on the error itself (the worker's native connection) or on its
 * cause (the client's ServiceError wrapping a grpc-js error).
 */
export function grpcCodeOf(error: unknown): number | undefined {
  const code = codeOf(error) ?? (error instanceof ServiceError ? codeOf(error.cause) : undefined);
  return typeof code === 'number' ? code : undefined;
}

/** Codes that say the request, the namespace or the credentials are wrong: Temporal answered, and said no. */
const REFUSALS: ReadonlySet<number> = new Set([
  GrpcStatus.INVALID_ARGUMENT,
  GrpcStatus.NOT_FOUND,
  GrpcStatus.PERMISSION_DENIED,
  GrpcStatus.FAILED_PRECONDITION,
  GrpcStatus.UNAUTHENTICATED,
]);

/** True for a configuration error, which retrying cannot mend; false for an outage or a timeout. */
export function isRefusal(error: unknown): boolean {
  const code = grpcCodeOf(error);
  return code !== undefined && REFUSALS.has(code);
}

/** The server's own words for a refusal. */
export function refusalReason(error: unknown): string {
  const cause = error instanceof ServiceError && error.cause ? error.cause : error;
  return cause instanceof Error ? cause.message : String(cause);
}
