import { Code, ConnectError } from "@connectrpc/connect";

export interface ErrorDetail {
  path: string;
  message: string;
}

/**
 * The stable error codes of API.md §1 and the HTTP status each one answers
 * with. Services throw these as ConnectErrors; the gateway maps them once.
 */
export const ERROR_CODES = {
  validation_failed: { status: 400, grpc: Code.InvalidArgument },
  invalid_cursor: { status: 400, grpc: Code.InvalidArgument },
  unauthorized: { status: 401, grpc: Code.Unauthenticated },
  missing_scope: { status: 403, grpc: Code.PermissionDenied },
  forbidden_platform: { status: 403, grpc: Code.PermissionDenied },
  not_found: { status: 404, grpc: Code.NotFound },
  slot_taken: { status: 409, grpc: Code.AlreadyExists },
  idempotency_key_in_use: { status: 409, grpc: Code.Aborted },
  contact_conflict: { status: 409, grpc: Code.AlreadyExists },
  conflict: { status: 409, grpc: Code.FailedPrecondition },
  daily_cap_reached: { status: 422, grpc: Code.ResourceExhausted },
  idempotency_key_reused: { status: 422, grpc: Code.FailedPrecondition },
  invalid_reference: { status: 422, grpc: Code.FailedPrecondition },
  invalid_slot: { status: 422, grpc: Code.FailedPrecondition },
  rate_limited: { status: 429, grpc: Code.ResourceExhausted },
  internal: { status: 500, grpc: Code.Internal },
  unavailable: { status: 503, grpc: Code.Unavailable },
} as const;
export type ErrorCode = keyof typeof ERROR_CODES;

const CODE_HEADER = "funil-error-code";
const DETAILS_HEADER = "funil-error-details";

/** A failure with a stable code, thrown by services and the gateway alike. */
export function apiError(code: ErrorCode, message: string, details?: ErrorDetail[]): ConnectError {
  const metadata = new Headers({ [CODE_HEADER]: code });
  if (details?.length) metadata.set(DETAILS_HEADER, encodeURIComponent(JSON.stringify(details)));
  return new ConnectError(message, ERROR_CODES[code].grpc, metadata);
}

export const notFound = (what: string) => apiError("not_found", `${what} not found`);
export const invalid = (message: string, details?: ErrorDetail[]) =>
  apiError("validation_failed", message, details);

/** The stable code, message and details of any error, for the HTTP answer. */
export function describeError(err: unknown): {
  code: ErrorCode;
  status: number;
  message: string;
  details?: ErrorDetail[];
} {
  if (err instanceof ConnectError) {
    const raw = err.metadata.get(CODE_HEADER) as ErrorCode | null;
    if (raw && raw in ERROR_CODES) {
      const encoded = err.metadata.get(DETAILS_HEADER);
      const details = encoded ? (JSON.parse(decodeURIComponent(encoded)) as ErrorDetail[]) : undefined;
      return { code: raw, status: ERROR_CODES[raw].status, message: err.rawMessage, details };
    }
    if (err.code === Code.Unavailable || err.code === Code.DeadlineExceeded || err.code === Code.Canceled) {
      return { code: "unavailable", status: 503, message: "a backing service is unavailable; retry" };
    }
  }
  return { code: "internal", status: 500, message: "internal error" };
}
