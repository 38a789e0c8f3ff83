/**
 * The failures of docs/api/conventions.md §Errors as domain values. Stores and domain code throw a
 * DomainError with a stable code; only the transport turns it into something
 * else (packages/rpc: a ConnectError; the gateway: an HTTP answer), so no rule
 * of the domain depends on how it is called.
 */
export interface ErrorDetail {
  path: string;
  message: string;
}

/** Every stable error code and the HTTP status it answers with. */
export const ERROR_CODES = {
  validation_failed: 400,
  invalid_cursor: 400,
  unauthorized: 401,
  missing_scope: 403,
  forbidden_platform: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  contact_conflict: 409,
  idempotency_key_in_use: 409,
  slot_taken: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  headers_too_large: 431,
  daily_cap_reached: 422,
  idempotency_key_reused: 422,
  invalid_reference: 422,
  invalid_slot: 422,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
} as const;
export type ErrorCode = keyof typeof ERROR_CODES;

export class DomainError extends Error {
  override readonly name = "DomainError";
  /** A remembered failure answered again under the same Idempotency-Key (docs/api/conventions.md §Idempotency-Key). */
  replayed = false;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
  ) {
    super(message);
  }
  get status(): number {
    return ERROR_CODES[this.code];
  }
}

export const fail = (code: ErrorCode, message: string, details?: ErrorDetail[]) =>
  new DomainError(code, message, details?.length ? details : undefined);
export const notFound = (what: string) => fail("not_found", `${what} not found`);
export const invalidReference = (details: ErrorDetail[]) =>
  fail("invalid_reference", details.map((d) => `${d.path}: ${d.message}`).join("; "), details);

/**
 * validation_failed with every problem found, not just the first. One message
 * format for every caller: "invalid <where>: <path> <message>".
 */
export function invalid(details: ErrorDetail[], where?: string): DomainError {
  const first = details[0];
  const message = first
    ? `invalid ${where ?? "request"}: ${first.path} ${first.message}`
    : `invalid ${where ?? "request"}`;
  return fail("validation_failed", message, details);
}

/** Collects problems so a client sees them all at once. */
export class Problems {
  readonly list: ErrorDetail[] = [];
  constructor(private readonly where?: string) {}
  add(path: string, message: string): this {
    this.list.push({ path: this.where ? `${this.where}.${path}` : path, message });
    return this;
  }
  throwIfAny(): void {
    if (this.list.length > 0) throw invalid(this.list, this.where);
  }
}
