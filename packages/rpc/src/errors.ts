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
  method_not_allowed: Code.Unimplemented,
  conflict: Code.FailedPrecondition,
  contact_conflict: Code.AlreadyExists,
  idempotency_key_in_use: Code.Aborted,
  slot_taken: Code.AlreadyExists,
  payload_too_large: Code.InvalidArgument,
  unsupported_media_type: Code.InvalidArgument,
  headers_too_large: Code.InvalidArgument,
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
/** Set on an answer given again under the same Idempotency-Key (docs/api/conventions.md §Idempotency-Key). */
export const REPLAYED_HEADER = "funil-idempotent-replayed";

/**
 * The default of RPC_MAX_MESSAGE_BYTES: a list page of 500 contacts with every text at its limit
 * (docs/api/contacts.md, docs/api/conventions.md §Limits) is about 50 MB; the largest request is far
 * smaller (the gateway reads at most 1 MiB of body).
 */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/**
 * A message over RPC_MAX_MESSAGE_BYTES, refused by whichever end meets it: the server reading a request
 * or writing an answer, the client sending a request or reading an answer.
 */
export const tooLarge = (what: "request" | "response", bytes: number, max: number, atLeast = "") =>
  new ConnectError(
    `the ${what} message is ${atLeast}${bytes} bytes, over the limit of ${max} (RPC_MAX_MESSAGE_BYTES)`,
    Code.ResourceExhausted,
  );

/** The ConnectError a DomainError becomes at the service's edge. */
export function toConnectError(err: DomainError): ConnectError {
  const metadata = new Headers();
  metadata.set(CODE_HEADER, err.code);
  if (err.details?.length) metadata.set(DETAILS_HEADER, encodeURIComponent(JSON.stringify(err.details)));
  if (err.replayed) metadata.set(REPLAYED_HEADER, "true");
  return new ConnectError(err.message, GRPC_CODES[err.code], metadata);
}

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
 * PostgreSQL's SQLSTATEs of a transaction it aborted because of other transactions at the same moment, not
 * because of the request: a deadlock (40P01), a serialization failure (40001), a lock it would not wait for
 * (55P03). The transaction rolled back whole, so nothing of it was written and a retry is the cure: the
 * same answer as an outage (docs/api/conventions.md §Outages and retries).
 */
const CONTENTION_CAUSES = new Set(["40P01", "40001", "55P03"]);

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

/**
 * True when err says a dependency is down or went away, or aborted the transaction for contention (retry
 * later), not that the request or the code is wrong.
 */
export function isUnavailable(err: unknown): boolean {
  if (err instanceof ConnectError) {
    const raw = err.metadata.get(CODE_HEADER);
    if (raw) return raw === "unavailable";
    return TRANSPORT_CODES.has(err.code);
  }
  const code = (err as { code?: unknown } | null)?.code;
  if (
    typeof code === "string" &&
    (UNAVAILABLE_CAUSES.has(code) || CONTENTION_CAUSES.has(code) || code.startsWith("08"))
  )
    return true;
  const cause = (err as { cause?: unknown } | null)?.cause;
  return cause !== undefined && cause !== err && isUnavailable(cause);
}

/** Seconds a client is asked to wait before retrying after a 503 (docs/api/conventions.md §Outages and retries). */
export const UNAVAILABLE_RETRY_AFTER_S = 1;

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
