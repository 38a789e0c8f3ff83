import { Code, ConnectError } from "@connectrpc/connect";
import { DomainError, ERROR_CODES, type ErrorCode, type ErrorDetail } from "@funil/errors";

/**
 * How a DomainError crosses the wire: its gRPC code (for plain gRPC clients)
 * and, in metadata, the stable code and details (for the gateway, which maps
 * them to HTTP once, in describeError).
 */
const GRPC_CODES: Record<ErrorCode, Code> = {
  validation_failed: Code.InvalidArgument,
  invalid_cursor: Code.InvalidArgument,
  unauthorized: Code.Unauthenticated,
  missing_scope: Code.PermissionDenied,
  forbidden_platform: Code.PermissionDenied,
  not_found: Code.NotFound,
  conflict: Code.FailedPrecondition,
  contact_conflict: Code.AlreadyExists,
  idempotency_key_in_use: Code.Aborted,
  slot_taken: Code.AlreadyExists,
  payload_too_large: Code.InvalidArgument,
  unsupported_media_type: Code.InvalidArgument,
  daily_cap_reached: Code.ResourceExhausted,
  idempotency_key_reused: Code.FailedPrecondition,
  invalid_reference: Code.FailedPrecondition,
  invalid_slot: Code.FailedPrecondition,
  rate_limited: Code.ResourceExhausted,
  internal: Code.Internal,
  unavailable: Code.Unavailable,
};

const CODE_HEADER = "funil-error-code";
const DETAILS_HEADER = "funil-error-details";
/** Set on an answer given again under the same Idempotency-Key (API.md §9). */
export const REPLAYED_HEADER = "funil-idempotent-replayed";

/** The ConnectError a DomainError becomes at the service's edge. */
export function toConnectError(err: DomainError): ConnectError {
  const metadata = new Headers();
  metadata.set(CODE_HEADER, err.code);
  if (err.details?.length) metadata.set(DETAILS_HEADER, encodeURIComponent(JSON.stringify(err.details)));
  if (err.replayed) metadata.set(REPLAYED_HEADER, "true");
  return new ConnectError(err.message, GRPC_CODES[err.code], metadata);
}

export interface DescribedError {
  code: ErrorCode;
  status: number;
  message: string;
  details?: ErrorDetail[];
  replayed?: boolean;
}

/** The stable code, message and details of any error, for the HTTP answer. */
export function describeError(err: unknown): DescribedError {
  if (err instanceof DomainError) {
    const d: DescribedError = { code: err.code, status: err.status, message: err.message };
    if (err.details) d.details = err.details;
    if (err.replayed) d.replayed = true;
    return d;
  }
  if (err instanceof ConnectError) {
    const raw = err.metadata.get(CODE_HEADER) as ErrorCode | null;
    if (raw && raw in ERROR_CODES) {
      const encoded = err.metadata.get(DETAILS_HEADER);
      const d: DescribedError = { code: raw, status: ERROR_CODES[raw], message: err.rawMessage };
      if (encoded) d.details = JSON.parse(decodeURIComponent(encoded)) as ErrorDetail[];
      if (err.metadata.get(REPLAYED_HEADER) === "true") d.replayed = true;
      return d;
    }
    if (err.code === Code.Unavailable || err.code === Code.DeadlineExceeded || err.code === Code.Canceled) {
      return { code: "unavailable", status: 503, message: "a backing service is unavailable; retry" };
    }
  }
  return { code: "internal", status: 500, message: "internal error" };
}
