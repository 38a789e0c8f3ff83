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

/**
 * Codes of a connection to a store or a peer that failed or went away: Node's socket errors,
 * postgres.js' connection states, and PostgreSQL's shutdown and connection-exception SQLSTATEs.
 */
const UNAVAILABLE_CAUSES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  "57P01",
  "57P02",
  "57P03",
  "53300",
]);

/**
 * Codes the transport gives a call whose peer was unreachable, went away or was too slow. A
 * handler's deliberate error always carries its stable code in the metadata, so a bare one of
 * these came from the connection, not from a decision of the service.
 */
const TRANSPORT_CODES = new Set([
  Code.Unavailable,
  Code.DeadlineExceeded,
  Code.Canceled,
  Code.Aborted,
  Code.Unknown,
  Code.Internal,
]);

/** True when err says a dependency is down or went away (retry later), not that the request or the code is wrong. */
export function isUnavailable(err: unknown): boolean {
  if (err instanceof ConnectError) {
    const raw = err.metadata.get(CODE_HEADER);
    if (raw) return raw === "unavailable";
    return TRANSPORT_CODES.has(err.code);
  }
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && (UNAVAILABLE_CAUSES.has(code) || code.startsWith("08"))) return true;
  const cause = (err as { cause?: unknown } | null)?.cause;
  return cause !== undefined && cause !== err && isUnavailable(cause);
}

/** Seconds a client is asked to wait before retrying after a 503 (API.md §1). */
export const UNAVAILABLE_RETRY_AFTER_S = 1;

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
  }
  if (isUnavailable(err)) {
    return { code: "unavailable", status: 503, message: "a backing service is unavailable; retry" };
  }
  return { code: "internal", status: 500, message: "internal error" };
}

/** A short, stack-free description of a failure, for warn lines. */
export function causeOf(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === "string" || typeof e?.code === "number" ? `${e.code}: ` : "";
  return `${code}${typeof e?.message === "string" ? e.message : String(err)}`.slice(0, 300);
}
